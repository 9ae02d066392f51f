"""A snapshot that reads captured tables one after another on one cursor, marking rows as Debezium does."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, ClassVar

from cdc_core.errors import ConnectorError
from cdc_core.events import Checkpoint, RawChange


def first_line(e: BaseException) -> str:
    """The first line of an error's message."""
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def result_order(description: Any, columns: list[str]) -> list[int | None] | None:
    """Where each of the table's ``columns`` is in a result set (None where it has none); None when they are the
    result's columns in order. As Debezium's ColumnUtils.toArray: a SELECT (an override) is read by column name,
    the exact name first, then ignoring case; its other columns are left out."""
    names = [d[0] for d in description or []]
    if not names or names == columns:
        return None
    lower = {}
    for i, n in enumerate(names):
        lower.setdefault(str(n).lower(), i)
    return [names.index(c) if c in names else lower.get(c.lower()) for c in columns]


class TableSnapshotReader:
    """Reads ``(captured, select)`` pairs (``captured.table`` a core Table) in order, ``fetch_size`` rows a batch.

    A subclass gives ``source(table)`` (the ``snapshot: true`` source block of its rows) and
    ``offset(completed)`` (the snapshot offset); ``stopped`` ends the read between batches.
    """

    #: How a refused SELECT names the database in its error ("Db2 refused ...").
    REFUSER: ClassVar[str] = "the server"

    conn: Any
    fetch_size: int
    log: Any
    stopped: bool

    def source(self, table: Any) -> dict[str, Any]:
        """The source block of ``table``'s rows (``snapshot`` = ``true``)."""
        raise NotImplementedError

    def offset(self, completed: bool) -> dict[str, Any]:
        """The offset a snapshot row carries (``completed``: the very last one)."""
        raise NotImplementedError

    def read(self, tables: list[tuple[Any, str]]) -> Iterator[list[RawChange | Checkpoint]]:
        """Yield ``op: r`` batches table by table; the very last record carries ``snapshot_completed``."""
        held: RawChange | None = None
        first = True
        offset = self.offset(False)
        for captured, select in tables:
            if self.stopped:
                return
            started = time.monotonic()
            table = captured.table
            source = self.source(table)
            cur = self.conn.cursor()
            try:
                cur.execute(select)
            except Exception as e:
                if type(e).__name__ == "OperationalError":
                    raise
                raise ConnectorError(f"the snapshot of {table.id} failed: {self.REFUSER} refused {select!r}: "
                                     f"{first_line(e)}") from None
            rows = 0
            table_first = True
            order = result_order(cur.description, [c.name for c in table.columns])
            while True:
                fetched = cur.fetchmany(self.fetch_size)
                if not fetched:
                    break
                if order is not None:
                    fetched = [[None if i is None else row[i] for i in order] for row in fetched]
                batch: list[RawChange | Checkpoint] = []
                for row in fetched:
                    marker = "first" if first else ("first_in_data_collection" if table_first else "true")
                    first = table_first = False
                    src = source if marker == "true" else {**source, "snapshot": marker}
                    if held is not None:
                        batch.append(held)
                    held = RawChange(table, "r", None, list(row), src, offset)
                rows += len(fetched)
                if batch:
                    yield batch
                    if self.stopped:
                        return
            cur.close()
            # As Debezium 2.7.4's setSnapshotMarker: "first" is the first table's first row only; an empty first
            # table leaves the next table's first row "first_in_data_collection".
            first = False
            if held is not None and rows and held.source["snapshot"] != "first":
                held = held._replace(source={**held.source, "snapshot": "last_in_data_collection"})
            self.log.info("snapshot of %s: %d rows in %.1fs", table.id, rows, time.monotonic() - started)
        last: list[RawChange | Checkpoint] = []
        if held is not None:
            last.append(held._replace(source={**held.source, "snapshot": "last"}, offset=self.offset(True)))
        last.append(Checkpoint(self.offset(True)))
        yield last
