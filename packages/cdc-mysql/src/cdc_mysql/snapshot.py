"""Reading the snapshot's rows: the text protocol's values parsed per column into the converters' inputs.

The workflow around it (locks, transaction, position, schemas) is ``cdc_mysql.snapshotting``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import pymysql
import pymysql.cursors
from pymysql.converters import conversions

from cdc_core.errors import ConnectorError
from cdc_core.events import Checkpoint, RawChange
from cdc_core.semantic import to_float32
from cdc_core.relational import Table

from cdc_mysql.model import SPATIAL_TYPES, ColumnDef, TableDef
from cdc_mysql.source import source_block
from cdc_mysql.types import UnpaddedMicros, parse_date, parse_datetime, parse_time

#: PyMySQL converters for parameters only: result values stay text/bytes and are parsed per column.
ENCODERS_ONLY = {k: v for k, v in conversions.items() if not isinstance(k, int)}


def _bytes(v: Any) -> bytes:
    return v if isinstance(v, (bytes, bytearray)) else str(v).encode("utf-8")


def _float32(v: Any) -> float:
    return to_float32(float(v))


def _unscaled_parser(scale: int) -> Callable[[Any], int | Decimal]:
    """DECIMAL text (exactly ``scale`` fraction digits, as the server writes it) to the unscaled int."""

    def parse(v: Any) -> int | Decimal:
        text = v if isinstance(v, str) else bytes(v).decode("ascii")
        point = text.find(".")
        if point < 0:
            return int(text) * 10 ** scale
        if len(text) - point - 1 == scale:
            return int(text[:point] + text[point + 1:])
        return Decimal(text)  # an override's expression with another scale: the converter rounds it

    return parse


def _text(v: Any) -> str:
    return v if isinstance(v, str) else bytes(v).decode("utf-8", "replace")


def value_parser(col: ColumnDef) -> Callable[[Any], Any]:
    """A parser from the text protocol's value (str, or bytes for binary data) to the intermediate value."""
    t = col.type_name
    if t in ("TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT", "YEAR", "BOOLEAN"):
        return int
    if t == "FLOAT" and (col.scale is not None or (col.length or 0) <= 24):
        return _float32  # single precision: the binlog carries the float32, the text form fewer digits
    if t in ("FLOAT", "DOUBLE", "REAL"):
        return float
    if t in ("DECIMAL", "NUMERIC"):
        return _unscaled_parser(col.scale or 0)
    if t == "BIT" or t in ("BINARY", "VARBINARY", "TINYBLOB", "BLOB", "MEDIUMBLOB", "LONGBLOB") or t in SPATIAL_TYPES:
        return _bytes
    if t == "DATE":
        optional = col.optional
        return lambda v: parse_date(_text(v), optional)
    if t == "TIME":
        return lambda v: parse_time(_text(v))
    if t == "TIMESTAMP":
        optional = col.optional
        return lambda v: _snapshot_micros(parse_datetime(_text(v), optional))
    if t == "DATETIME":
        optional = col.optional
        return lambda v: parse_datetime(_text(v), optional)
    return _text


def _snapshot_micros(us: int | None) -> int | None:
    """A TIMESTAMP read by a SELECT: marked, so its ZonedTimestamp keeps Debezium's snapshot form (zero dates stay as they are)."""
    return UnpaddedMicros(us) if us else us


def row_parser(definition: TableDef, names: list[str] | None = None) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """A function turning one result row into intermediate values in the table's column order.

    ``names`` are the result's column names (a ``snapshot.select.statement.overrides`` SELECT may
    order them differently or leave some out: those are None); None means the table's own order.
    """
    index = {n.lower(): i for i, n in enumerate(names)} if names is not None else None
    env: dict[str, Any] = {}
    items = []
    for k, col in enumerate(definition.columns):
        i = k if index is None else index.get(col.name.lower())
        if i is None:
            items.append("None")
            continue
        env[f"p{k}"] = value_parser(col)
        items.append(f"None if r[{i}] is None else p{k}(r[{i}])")
    code = f"def parse(r):\n    return ({', '.join(items)}{',' if len(items) == 1 else ''})"
    exec(compile(code, "<cdc snapshot row parser>", "exec"), env)
    return env["parse"]


class SnapshotReader:
    """Scans captured tables inside the consistent-snapshot transaction and yields ``op: r`` batches.

    ``snapshot.fetch.size`` rows are fetched and handed on at a time. ``min.row.count.to.stream.results``:
    a table whose estimated row count is above it (or unknown) is read with an unbuffered cursor, rows
    coming off the socket as they are handed on; smaller tables are read whole into memory first
    (faster, and the server is done with the statement at once); 0 streams every table. As in
    Debezium's ``readTableStatement``, a table of exactly that many rows is still buffered.
    """

    def __init__(self, conn: pymysql.connections.Connection, connector: str, server: str, server_id: int,
                 position: dict[str, Any], fetch_size: int, log: Any, min_rows_to_stream: int = 0,
                 estimates: dict[str, int | None] | None = None):
        self.conn = conn
        self.connector = connector
        self.server = server
        self.server_id = server_id
        self.position = position
        self.fetch_size = fetch_size
        self.log = log
        self.min_rows_to_stream = min_rows_to_stream
        self.estimates = estimates or {}
        self.stopped = False
        self.rows_scanned: dict[str, int] = {}
        #: Called with each table's ``db.table`` and rows once it is read (the initial snapshot's notifications).
        self.table_done: Callable[[str, int], None] = lambda name, rows: None
        #: ``cdc_core.metrics.SnapshotMetrics`` to report finished tables to, if any.
        self.metrics: Any = None

    def streams(self, table: str) -> bool:
        """True if ``table`` (``db.table``) is read with an unbuffered (streaming) cursor."""
        estimate = self.estimates.get(table)
        return self.min_rows_to_stream == 0 or estimate is None or estimate > self.min_rows_to_stream

    def _offset(self) -> dict[str, Any]:
        return {**self.position, "snapshot": True, "ts_sec": time.time_ns() // 1_000_000_000}

    def read(self, tables: list[tuple[Table, TableDef, str]]) -> Iterator[list[RawChange | Checkpoint]]:
        """Yield batches of ``r`` changes of each (table, definition, SELECT); marks ``first``/``last``."""
        from cdc_mysql.text_rows import parsed_rows  # it builds on this module's parsers
        pending: RawChange | None = None
        batch: list[RawChange | Checkpoint] = []
        first_overall = True
        file, pos = self.position["file"], self.position["pos"]
        for table, definition, statement in tables:
            if self.stopped:
                return
            started = time.monotonic()
            db, name = definition.id.database, definition.id.table
            rows = 0
            prev: RawChange | None = None
            streamed = self.streams(f"{db}.{name}")
            with _snapshot_cursor(self.conn, pymysql.cursors.SSCursor if streamed else pymysql.cursors.Cursor) as cur:
                try:
                    cur.execute(statement)
                except pymysql.err.MySQLError as e:
                    raise _refusal(e, definition.id, statement) from None
                fetch = parsed_rows(cur, definition)
                while True:
                    chunk = fetch(self.fetch_size)
                    if not chunk:
                        break
                    # Rows in the middle of a table share one source block and offset per fetch.
                    # server_id 0: Debezium's snapshot reads carry no binlog event, so no server id.
                    source = source_block(self.connector, self.server, time.time_ns() // 1_000_000, "true", db, name,
                                          0, None, file, pos, 0, None, None)
                    offset = self._offset()
                    for row in chunk:
                        src = source
                        if prev is None:
                            src = {**source, "snapshot": "first" if first_overall else "first_in_data_collection"}
                            first_overall = False
                        else:
                            if pending is not None:
                                batch.append(pending)
                            pending = prev
                        prev = RawChange(table, "r", None, row, src, offset)
                        rows += 1
                    if len(batch) + 2 >= self.fetch_size:  # two rows are held back (to mark first/last)
                        yield batch
                        batch = []
                        if self.stopped:
                            return
            if prev is not None:
                if pending is not None:
                    batch.append(pending)
                # Debezium's precedence: last, first, last_in_data_collection, first_in_data_collection.
                if prev.source["snapshot"] != "first":
                    prev = prev._replace(source={**prev.source, "snapshot": "last_in_data_collection"})
                pending = prev
            self.rows_scanned[f"{db}.{name}"] = rows
            self.table_done(f"{db}.{name}", rows)
            if self.metrics is not None:
                self.metrics.table_completed(f"{db}.{name}")
            self.log.info("snapshot of %s.%s: %d rows in %.1fs (%s)", db, name, rows, time.monotonic() - started,
                          "streamed" if streamed else "buffered")
        if pending is not None:
            batch.append(pending._replace(source={**pending.source, "snapshot": "last"}))
        if batch:
            yield batch


@contextmanager
def _snapshot_cursor(conn: pymysql.connections.Connection, cls: type) -> Iterator[Any]:
    """A cursor closed on exit; when the connection broke mid-read, closed without draining the dead socket.

    PyMySQL's unbuffered result drains the rest of its rows when closed or collected; after a lost
    connection that raises an AttributeError (its socket file is gone) which would replace the real
    error, a lost connection the engine retries, and print tracebacks from ``__del__``.
    """
    cur = conn.cursor(cls)
    try:
        yield cur
    except BaseException:
        if getattr(conn, "_sock", None) is None:  # force-closed by PyMySQL: the connection is gone
            result = getattr(cur, "_result", None)
            if result is not None:
                result.unbuffered_active = False
            cur._result = None
        cur.close()
        raise
    cur.close()


#: Server error codes of a connection or server going away, or of a transient conflict: not the statement's fault.
_TRANSIENT = frozenset({1053, 1205, 1213, 1927})


def _refusal(e: BaseException, table: Any, statement: str) -> BaseException:
    """The server's refusal of a table's snapshot SELECT (an override, a custom query) as one line naming both;
    a connection failure is returned as it is (the engine retries it)."""
    code = e.args[0] if e.args and isinstance(e.args[0], int) else None
    if code is None or code >= 2000 or code in _TRANSIENT:
        return e
    line = " ".join(statement.split())
    excerpt = line if len(line) <= 120 else line[:117] + "..."
    return ConnectorError(
        f"the snapshot of {table} failed: the server refused its SELECT ({excerpt!r}): {e.args[-1]}; check "
        f"snapshot.select.statement.overrides.{table} (or the custom snapshot query)")
