"""The binlog events of every transaction made by cdc (``cdc_mysql.hot_events``) equal mysql-replication's own.

The same binlog range of a real MariaDB is read twice, once with the fast path and once through the
library alone; every event the streamer reads must carry the same class and the same values in the
attributes cdc uses (positions, GTIDs, table ids, column bitmaps, where the row images start).
Covered: inserts, updates, deletes, multi-row events, NULLs, a 300-column table (a two-byte column
count), a table first seen mid-range (its TABLE_MAP parsed by the library), DDL, BEGIN-less rows of
non-transactional tables. MySQL's rows events v2 are made by the same code but need a MySQL server
to be read here: they are checked only by the unit case at the end.
"""

from __future__ import annotations

import itertools
import struct

from pymysqlreplication.constants import BINLOG
from pymysqlreplication.event import MariadbGtidEvent, XidEvent
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

from cdc_mysql.binlog import BinlogStartPosition, CdcBinLogStreamReader
from cdc_mysql.hot_events import SKIP, read_hot

_ids = itertools.count(7100)

#: What the streamer and the look-ahead buffer read of each kind of event.
_FIELDS = {
    XidEvent: ("timestamp",),
    MariadbGtidEvent: ("gtid", "flags", "timestamp"),
    WriteRowsEvent: ("table_id", "number_of_columns", "columns_present_bitmap", "timestamp", "schema", "table"),
    DeleteRowsEvent: ("table_id", "number_of_columns", "columns_present_bitmap", "timestamp", "schema", "table"),
    UpdateRowsEvent: ("table_id", "number_of_columns", "columns_present_bitmap", "columns_present_bitmap2",
                      "timestamp", "schema", "table"),
}


def _read(server, start: tuple[str, int], end: int, hot: bool) -> tuple[list[tuple], int]:
    """Every event from ``start`` to binlog position ``end``: what cdc reads of each; how many the fast path made."""
    reader = CdcBinLogStreamReader(server.conninfo(), next(_ids), BinlogStartPosition(*start), mariadb=True,
                                   annotate_rows=False, heartbeat_seconds=0)
    if not hot:
        reader.cdc_hot = False
    else:
        assert reader.cdc_hot, "the fast path is off with the connector's settings"
    out, made = [], 0
    try:
        while True:
            ev = reader.fetchone()
            header = ev.packet
            made += header.__class__.__name__ == "EventHeader"
            seen = (ev.__class__.__name__, header.log_pos, header.event_size, header.server_id, header.timestamp)
            fields = tuple(getattr(ev, f) for f in _FIELDS.get(ev.__class__, ()))
            rows_at = None
            if ev.__class__ in (WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent):
                rows_at = bytes(header.packet._data[header.packet._position:])  # where cdc's decoder starts
            out.append((seen, fields, rows_at))
            if header.log_pos >= end:
                return out, made
    finally:
        reader.close()


def test_fast_path_events_equal_the_librarys(mariadb_server, mariadb_db):
    db = mariadb_db
    run = lambda sql: mariadb_server.execute(sql, database=db)
    run("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(40), amount DECIMAL(12,2), at DATETIME(6))")
    wide = ", ".join(f"c{i} INT" for i in range(299))
    run(f"CREATE TABLE wide (id INT PRIMARY KEY, {wide})")
    run("CREATE TABLE plain (id INT PRIMARY KEY, v INT) ENGINE=MyISAM")
    start = mariadb_server.execute("SHOW MASTER STATUS")[0][:2]
    for i in range(1, 30):
        run(f"INSERT INTO t VALUES ({i}, {'NULL' if i % 3 == 0 else repr('n' * i)}, {i}.25, '2024-01-0{i % 9 + 1} 10:00:00.{i:06d}')")
    run("INSERT INTO t SELECT seq, CONCAT('bulk-', seq), seq, NULL FROM seq_100_to_400")
    run("UPDATE t SET name = CONCAT(name, '!') WHERE id > 10")
    run("DELETE FROM t WHERE id BETWEEN 5 AND 8")
    run("INSERT INTO wide (id, c0, c298) VALUES (1, 1, 298), (2, NULL, 2)")
    run("UPDATE wide SET c150 = 150")
    run("ALTER TABLE t ADD COLUMN extra INT")
    run("INSERT INTO t (id, extra) VALUES (1000, 1)")
    run("CREATE TABLE later (id INT PRIMARY KEY)")
    run("INSERT INTO later VALUES (1), (2)")
    run("INSERT INTO plain VALUES (1, 1), (2, 2)")  # MyISAM: no XID, a COMMIT query
    run("DELETE FROM later")
    end = int(mariadb_server.execute("SHOW MASTER STATUS")[0][1])

    fast, made = _read(mariadb_server, (start[0], int(start[1])), end, hot=True)
    slow, none = _read(mariadb_server, (start[0], int(start[1])), end, hot=False)

    assert none == 0
    assert fast == slow
    kinds = {seen[0] for seen, _, _ in fast}
    assert {"WriteRowsEvent", "UpdateRowsEvent", "DeleteRowsEvent", "XidEvent", "MariadbGtidEvent"} <= kinds
    assert made >= 60, f"the fast path made only {made} of {len(fast)} events"
    assert any(fields[1] == 300 for seen, fields, _ in fast if seen[0] == "UpdateRowsEvent")


class _Reader:
    """What ``read_hot`` reads of a reader: its table map, position and the format's post-header lengths."""

    def __init__(self, lengths):
        self.table_map = {7: type("T", (), {"schema": "db", "table": "t", "columns": []})()}
        self.log_pos = 0
        self._BinLogStreamReader__post_header_lengths = lengths


class _Packet:
    def __init__(self, data):
        self._data = data
        self._position = 0


def test_rows_event_v2_with_extra_data_and_declared_post_header():
    """MySQL's v2 rows events (extra data; a format declaring a longer post-header) start the rows where the library does."""
    # table id, flags, extra data length; 2 bytes more of post-header (declared 12, not 10); 5 bytes of extra data
    body = (7).to_bytes(6, "little") + struct.pack("<HH", 1, 2 + 5) + b"\x00\x00" + b"\x01PPPP"
    body += bytes([3]) + b"\x07" + b"\x05" + b"ROWS"
    header = b"\x00" + struct.pack("<IBIIIH", 1700000000, BINLOG.UPDATE_ROWS_EVENT_V2, 9, 19 + len(body), 555, 0)
    lengths = [0] * 40
    lengths[BINLOG.UPDATE_ROWS_EVENT_V2 - 1] = 12
    reader = _Reader(lengths)
    pkt = _Packet(header + body)
    ev = read_hot(reader, pkt, pkt._data, BINLOG.UPDATE_ROWS_EVENT_V2)
    assert ev.__class__ is UpdateRowsEvent
    assert (ev.table_id, ev.number_of_columns, ev.columns_present_bitmap, ev.columns_present_bitmap2) == (7, 3, b"\x07", b"\x05")
    assert pkt._data[pkt._position:] == b"ROWS"
    assert (ev.packet.log_pos, ev.packet.server_id, ev.timestamp, reader.log_pos) == (555, 9, 1700000000, 555)
    # a table id without TABLE_MAP: no event, as the library's
    other = header + (8).to_bytes(6, "little") + body[6:]
    assert read_hot(reader, _Packet(other), other, BINLOG.UPDATE_ROWS_EVENT_V2) is SKIP
    # a post-header shorter than the event's own: left to the library, which refuses it
    lengths[BINLOG.UPDATE_ROWS_EVENT_V2 - 1] = 6
    assert read_hot(reader, _Packet(header + body), header + body, BINLOG.UPDATE_ROWS_EVENT_V2) is None
