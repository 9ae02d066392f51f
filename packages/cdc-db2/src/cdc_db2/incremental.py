"""Ad hoc (incremental and blocking) snapshots for Db2: key-ordered chunk reads and signal-table watermarks.

The core runs Debezium's watermark algorithm (``cdc_core.incremental``); this module gives it
chunk reads in Db2 SQL (keys compared column by column, as Db2 has no row-value comparison),
watermark rows written to the signal table (``signal.data.collection``, ``<schema>.<table>``, which
must be in capture mode so the watermarks come back through its CD table), and the blocking snapshot
(cdc_db2.blocking).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from cdc_core.config import Config
from cdc_core.events import RawChange
from cdc_core.incremental.spi import ChunkRows, Key
from cdc_core.relational import Table
from cdc_core.signals.conditions import Node
from cdc_core.signals.config import SIGNAL_DATA_COLLECTION
from cdc_db2 import driver
from cdc_db2.catalog import quote
from cdc_db2.source import source_block
from cdc_db2.timestamps import select_list


def signal_table(config: Config) -> tuple[str, str] | None:
    """``signal.data.collection`` as ``(schema, table)`` (None when unset)."""
    name = config.get(SIGNAL_DATA_COLLECTION)
    if not name:
        return None
    parts = [p.strip('"') for p in str(name).split(".")]
    return (parts[-2] if len(parts) > 1 else "", parts[-1])


def _table(table: Table) -> str:
    return f"{quote(table.id.schema or '')}.{quote(table.id.table)}"


def key_after(key: list[str], values: Key, optional: list[bool] | None = None) -> tuple[str, list[Any]]:
    """``key > values`` in lexicographic order, without row-value comparison (Db2 has none).

    ``optional`` (per key column, nullable): as Debezium 2.7.4's AbstractChunkQueryBuilder.addLowerBound with Db2's
    ``nullsSortLast`` (NULL is higher than every value): a nullable column's ``> v`` is ``(k > v OR k IS NULL)``,
    ``> NULL`` is ``1 = 0`` and ``= NULL`` is ``k IS NULL``."""
    ors, params = [], []
    nullable = optional or [False] * len(key)
    for i in range(len(key)):
        terms = []
        for j in range(i + 1):
            column, value, last = quote(key[j]), values[j], j == i
            if not nullable[j]:
                terms.append(f"{column} > ?" if last else f"{column} = ?")
                params.append(value)
            elif value is not None:
                terms.append(f"({column} > ? OR {column} IS NULL)" if last else f"{column} = ?")
                params.append(value)
            else:
                terms.append("1 = 0" if last else f"{column} IS NULL")
        ors.append("(" + " AND ".join(terms) + ")")
    return "(" + " OR ".join(ors) + ")", params


def key_upto(key: list[str], values: Key, optional: list[bool] | None = None) -> tuple[str, list[Any]]:
    """``key <= values``: not ``key > values``."""
    text, params = key_after(key, values, optional)
    return f"NOT {text}", params


class Db2ChunkReader:
    """Chunk reads and watermark writes on one connection of their own."""

    def __init__(self, connector: Any):
        """Read through a new connection of ``connector``'s configuration."""
        self.connector = connector
        self.conn = driver.connect(connector.config)
        self.signal = signal_table(connector.config)

    def _rows(self, statement: str, params: list[Any]) -> list[tuple[Any, ...]]:
        cur = self.conn.cursor()
        cur.execute(statement, tuple(params))
        return cur.fetchall()

    def max_key(self, table: Table, key: list[str], condition: Node | None) -> Key | None:
        """The largest key of the rows matching ``condition``."""
        where, params = ("", [])
        if condition is not None:
            text, params = condition.render(quote, "?")
            where = f" WHERE {text}"
        order = ", ".join(f"{quote(k)} DESC" for k in key)
        # A TIMESTAMP(7..12) key as its text: a datetime would cut the bound below the last row's nanoseconds.
        rows = self._rows(f"SELECT {select_list(table.column(k) for k in key)} FROM {_table(table)}{where} "
                          f"ORDER BY {order} "
                          "FETCH FIRST 1 ROWS ONLY", params)
        return list(rows[0]) if rows else None

    def read_chunk(self, table: Table, key: list[str], after: Key | None, upto: Key, limit: int,
                   condition: Node | None) -> ChunkRows:
        """At most ``limit`` rows with ``after < key <= upto`` in key order, as incremental ``op: r`` READs."""
        parts, params = [], []
        nullable = [table.column(k).optional for k in key]
        if after is not None:
            text, values = key_after(key, after, nullable)
            parts.append(text)
            params += values
        text, values = key_upto(key, upto, nullable)
        parts.append(text)
        params += values
        if condition is not None:
            text, values = condition.render(quote, "?")
            parts.append(f"({text})")
            params += values
        cols = select_list(table.columns)
        rows = self._rows(f"SELECT {cols} FROM {_table(table)} WHERE {' AND '.join(parts)} ORDER BY "
                          f"{', '.join(quote(k) for k in key)} FETCH FIRST {int(limit)} ROWS ONLY", params)
        if not rows:
            return ChunkRows()
        source = source_block(self.connector.server, self.connector.db, time.time_ns() // 1000, "incremental",
                              table.id.schema or "", table.id.table, None, None)
        changes = [RawChange(table, "r", None, list(r), source, None) for r in rows]
        positions = [table.columns.index(table.column(k)) for k in key]
        return ChunkRows(changes, [rows[-1][i] for i in positions], [rows[0][i] for i in positions])

    def _signal_name(self) -> str:
        if self.signal is None:
            raise ValueError("signal.data.collection is not set")
        return f"{quote(self.signal[0])}.{quote(self.signal[1])}"

    def insert_watermark(self, row_id: str, kind: str, data: str) -> None:
        """A watermark row in the signal table (autocommit: it reaches the log at once)."""
        self.conn.cursor().execute(f"INSERT INTO {self._signal_name()} VALUES (?, ?, ?)", (row_id, kind, data))

    def delete_watermark(self, row_id: str) -> None:
        """Delete watermark row ``row_id`` (its first column is the id)."""
        table = next((t.table for t in self.connector._tables
                      if (t.table.id.schema, t.table.id.table) == self.signal), None)
        column = table.columns[0].name if table is not None else "ID"
        self.conn.cursor().execute(f"DELETE FROM {self._signal_name()} WHERE {quote(column)} = ?", (row_id,))

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


class Db2IncrementalSource:
    """The Db2 connector's ad hoc snapshot capabilities (``cdc_core.incremental.spi``)."""

    def __init__(self, connector: Any):
        """Capabilities over ``connector``'s captured tables and configuration."""
        self.connector = connector

    def captured_tables(self) -> list[Table]:
        """The tables the connector knows now: in capture mode, and the included ones that are not (as Debezium
        2.7.4's Db2 schema has every table its snapshot found, so BlockingSnapshotIT reads B, never in capture mode)."""
        return [t.table for t in self.connector._tables + self.connector._uncaptured]

    def reader(self) -> Db2ChunkReader:
        """A chunk reader with its own connection."""
        return Db2ChunkReader(self.connector)

    def transaction_of(self, change: RawChange) -> Any:
        """Not known for Db2 reads (they give no in-progress transaction list)."""
        return None

    def blocking_snapshot(self, tables: list[tuple[Table, Node | None]], offset_for: Callable[[Table], dict | None],
                          stopped: Callable[[], bool]) -> Iterator[list[Any]]:
        """The blocking snapshot as Debezium's Db2 connector takes it: CREATEs, then the rows (cdc_db2.blocking)."""
        from cdc_db2.blocking import blocking_snapshot

        return blocking_snapshot(self.connector, tables, offset_for, stopped)

    def close(self) -> None:
        """Nothing held between reads."""
