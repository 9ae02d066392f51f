"""One table of an incremental snapshot, and the snapshot's progress as it is stored in offsets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdc_core.incremental.spi import Key
from cdc_core.relational import Table
from cdc_core.signals.conditions import Node

#: The offset key under which a running incremental snapshot's progress is stored.
STATE_KEY = "incremental_snapshot"


@dataclass(eq=False)
class TableScan:
    """One table of a running incremental snapshot: what to read, and how far it got.

    ``committed`` is the last key of the last chunk whose window closed (what offsets record and
    a restart resumes after); ``cursor`` is where the reader thread is, possibly chunks ahead.
    """

    table: Table
    key: list[str]
    condition_text: str | None = None
    condition: Node | None = None
    surrogate: str | None = None
    max_key: Key | None = None
    max_known: bool = False
    first_key: Key | None = None
    committed: Key | None = None
    cursor: Key | None = None
    rows: int = 0
    #: Set by stop-snapshot: no further READs of this table.
    stopped: bool = False
    #: The reader has read the table's last chunk (its window may still be open).
    reading_done: bool = False
    #: Windows registered and not yet closed.
    inflight: int = 0
    #: A reader thread is working on it.
    assigned: bool = False
    failures: int = 0
    #: Why the table cannot be read (Debezium's TableScanCompletionStatus), or None.
    skip: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The table's ``schema.table`` identifier."""
        return self.table.id.identifier

    def to_state(self) -> dict[str, Any]:
        """The JSON the offset stores for this table."""
        out = {"table": self.name, "key": list(self.key), "surrogate": self.surrogate,
               "condition": self.condition_text, "max": self.max_key, "max_known": self.max_known,
               "first": self.first_key, "last": self.committed, "rows": self.rows}
        if self.table.id.catalog is not None and self.table.id.schema is not None:
            # Where ``schema.table`` does not say which database (SQL Server's several databases).
            out["catalog"] = self.table.id.catalog
        if self.skip:  # a table that cannot be read, waiting for its turn to be reported (UNKNOWN_SCHEMA, ...)
            out["skip"] = self.skip
        return out


def format_key(key: Key | None) -> str:
    """A key as Debezium prints it in notifications and metrics: its values joined by commas."""
    if key is None:
        return "<null>"
    return ",".join("<null>" if v is None else str(v) for v in key)
