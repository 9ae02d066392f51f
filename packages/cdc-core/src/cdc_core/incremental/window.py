"""The snapshot window: a chunk's rows, and the keys the log changed while the window was open."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from cdc_core.events import UNAVAILABLE, RawChange
from cdc_core.incremental.spi import Key
from cdc_core.incremental.state import TableScan
from cdc_core.relational import Table

KeyFn = Callable[[Sequence[Any]], bytes | None]


def key_function(table: Table, columns: list[str]) -> KeyFn | None:
    """A function from a raw row of ``table`` to a comparable key of ``columns`` (None if a column is missing).

    Values go through the columns' converters, so a key read by a SELECT and the same key
    decoded from the log compare equal whatever raw form each arrived in.
    """
    try:
        cols = [(table.columns.index(table.column(c)), table.column(c).convert) for c in columns]
    except KeyError:
        return None

    def key(row: Sequence[Any]) -> bytes | None:
        values = []
        for i, convert in cols:
            v = row[i]
            if v is UNAVAILABLE:
                return None
            values.append(None if v is None else convert(v))
        return orjson.dumps(values, default=str)

    return key


@dataclass(eq=False)
class Window:
    """One chunk between its low and high watermark.

    The reader thread fills ``rows`` before it writes the high watermark. While the window is
    open (the stream passed the low watermark), every key a log event of the table touches goes
    into ``seen``; when the stream reaches the high watermark, the rows whose key was seen are
    dropped (the log event supersedes them) and the rest are emitted as READs. Keys changed just
    before the low watermark by a transaction the read did not see (``invisible``) are added to
    ``seen`` at the close, from the coordinator's lookback.

    With position watermarks ``low`` and ``high`` are the server's log positions before and after
    the read (``high`` is set last, once the rows are in: a window with a ``high`` is ready to close).
    """

    id: str
    scan: TableScan
    created: float = field(default_factory=time.monotonic)
    rows: list[RawChange] = field(default_factory=list)
    from_key: Key | None = None
    first_key: Key | None = None
    last_key: Key | None = None
    done: bool = False
    opened: bool = False
    seen: set[bytes] = field(default_factory=set)
    invisible: frozenset[Any] = frozenset()
    low: Any = None
    high: Any = None

    def surviving_rows(self) -> list[RawChange]:
        """The rows no log event inside the window superseded."""
        if not self.seen or not self.rows:
            return self.rows
        key = key_function(self.rows[0].table, self.scan.key)
        if key is None:
            return self.rows
        seen = self.seen
        return [r for r in self.rows if key(r.after) not in seen]
