"""The events of every transaction (MariaDB GTID, XID, a known TABLE_MAP, rows) read without mysql-replication's wrapper.

A single-row transaction is four binlog events, and mysql-replication builds each through
``BinLogPacketWrapper`` and its event class: keyword arguments, filters, a ``Table.data`` dict per
rows event. With single-row transactions that was 57% of the connector thread, some 85 µs a
transaction (py-spy on a drain of 30k single-row transactions: ``BinLogPacketWrapper.__init__``
36%, ``WriteRowsEvent.__init__`` 13%). ``read_hot`` makes these four kinds itself: objects of the
library's own classes (the streamer and the look-ahead buffer test ``ev.__class__``) carrying the
attributes cdc reads, with a small ``EventHeader`` as their ``packet``. Every other event, and every
packet that is not an OK packet, goes through the library unchanged (``HOT_KINDS`` lists the hot
types).

What the library does with these four kinds is done here too: ``log_pos`` follows the event, a
TABLE_MAP whose table id is known is dropped (``freeze_schema``: the library makes no event of it),
a rows event of a table id without TABLE_MAP is dropped (the library's ``_processed = False``). The
reader uses this path only where the library would do nothing else with them: no table or schema
filters, no checksum verification, no end position or start timestamp (``usable``).
"""

from __future__ import annotations

import struct
from typing import Any

from pymysqlreplication.constants import BINLOG
from pymysqlreplication.event import MariadbGtidEvent, XidEvent
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

_HEADER = struct.Struct("<IBIIIH").unpack_from  # after the OK byte: timestamp, type, server id, size, next position, flags
_U64 = struct.Struct("<Q").unpack_from
_GTID = struct.Struct("<QIB").unpack_from  # MariaDB GTID event: sequence number, domain id, flags
_U16 = struct.Struct("<H").unpack_from
_V2 = struct.Struct("<HH").unpack_from  # rows event v2: flags, extra data length
_new = object.__new__

#: Rows event types: (class, v2, two column bitmaps).
_ROWS = {
    BINLOG.WRITE_ROWS_EVENT_V1: (WriteRowsEvent, False, False),
    BINLOG.UPDATE_ROWS_EVENT_V1: (UpdateRowsEvent, False, True),
    BINLOG.DELETE_ROWS_EVENT_V1: (DeleteRowsEvent, False, False),
    BINLOG.WRITE_ROWS_EVENT_V2: (WriteRowsEvent, True, False),
    BINLOG.UPDATE_ROWS_EVENT_V2: (UpdateRowsEvent, True, True),
    BINLOG.DELETE_ROWS_EVENT_V2: (DeleteRowsEvent, True, False),
}

#: What ``read_hot`` returns for an event the library would not have returned either (read the next one).
SKIP = object()


class EventHeader:
    """An event's ``packet``: the common header's fields and the PyMySQL packet (``packet``), as the wrapper's."""

    __slots__ = ("event_size", "event_type", "flags", "log_pos", "packet", "server_id", "timestamp")


#: The event types ``read_hot`` makes: the rows events, MariaDB's GTID, XID, TABLE_MAP.
HOT_KINDS: frozenset[int] = frozenset((*_ROWS, BINLOG.MARIADB_GTID_EVENT, BINLOG.XID_EVENT, BINLOG.TABLE_MAP_EVENT))


def usable(reader: Any) -> bool:
    """Whether the library, given ``reader``'s settings, does with these events only what ``read_hot`` does."""
    private = "_BinLogStreamReader__"
    allowed = getattr(reader, private + "allowed_events", ())
    return (not getattr(reader, private + "verify_checksum", True)
            and getattr(reader, private + "freeze_schema", False)
            and all(getattr(reader, private + name, None) is None
                    for name in ("only_tables", "ignored_tables", "only_schemas", "ignored_schemas"))
            and not reader.end_log_pos and not reader.skip_to_timestamp
            and all(cls in allowed for cls in (XidEvent, MariadbGtidEvent, WriteRowsEvent, UpdateRowsEvent,
                                               DeleteRowsEvent)))


def read_hot(reader: Any, pkt: Any, data: bytes, etype: int) -> Any:
    """The event of OK packet ``pkt`` (``data`` its bytes, ``etype`` one of ``HOT_KINDS``); ``SKIP`` where the library
    would make no event of it (read the next packet); None where the library is to make it (a new table's TABLE_MAP, a
    rows event with an 8-byte column count or a post-header shorter than its own)."""
    timestamp, _, server_id, event_size, log_pos, flags = _HEADER(data, 1)
    if log_pos:
        reader.log_pos = log_pos
    table_map = reader.table_map
    if etype == BINLOG.TABLE_MAP_EVENT:
        if int.from_bytes(data[20:26], "little") in table_map:
            return SKIP  # known: the library parses nothing and returns no event (freeze_schema)
        return None  # a new table: the library parses it
    header = _new(EventHeader)
    header.timestamp = timestamp
    header.event_type = etype
    header.server_id = server_id
    header.event_size = event_size
    header.log_pos = log_pos
    header.flags = flags
    header.packet = pkt
    if etype == BINLOG.XID_EVENT:
        ev = _new(XidEvent)
        ev.xid = _U64(data, 20)[0]
    elif etype == BINLOG.MARIADB_GTID_EVENT:
        ev = _new(MariadbGtidEvent)
        seq, domain, gtid_flags = _GTID(data, 20)
        ev.server_id = server_id
        ev.gtid_seq_no = seq
        ev.domain_id = domain
        ev.flags = gtid_flags
        ev.gtid = f"{domain}-{server_id}-{seq}"
    else:
        cls, v2, two_bitmaps = _ROWS[etype]
        table_id = int.from_bytes(data[20:26], "little")
        table = table_map.get(table_id)
        if table is None:
            return SKIP  # no TABLE_MAP for it (filtered): the library makes no event either
        ev = _new(cls)
        ev.table_id = table_id
        ev.schema = table.schema
        ev.table = table.table
        ev.columns = table.columns
        pos = 26
        skip = _post_header_extra(reader, etype, 10 if v2 else 8)
        if skip is None:
            return None  # a post-header shorter than the format's: the library's to refuse
        if v2:
            ev.flags, extra = _V2(data, pos)
            pos += 4 + skip
            if extra > 2:
                pos += extra - 2
        else:
            ev.flags = _U16(data, pos)[0]
            pos += 2 + skip
        count = data[pos]
        if count < 251:
            pos += 1
        elif count == 252:
            count = int.from_bytes(data[pos + 1:pos + 3], "little")
            pos += 3
        elif count == 253:
            count = int.from_bytes(data[pos + 1:pos + 4], "little")
            pos += 4
        else:
            return None  # 8-byte or NULL column counts: leave them to the library
        ev.number_of_columns = count
        size = (count + 7) // 8
        ev.columns_present_bitmap = data[pos:pos + size]
        pos += size
        if two_bitmaps:
            ev.columns_present_bitmap2 = data[pos:pos + size]
            pos += size
        pkt._position = pos
    ev.packet = header
    ev.timestamp = timestamp
    ev.event_type = etype
    ev.event_size = event_size - 19
    return ev


def _post_header_extra(reader: Any, etype: int, known: int) -> int | None:
    """Bytes a FORMAT_DESCRIPTION's declared post-header length adds after the ``known`` ones (the library's
    ``_advance_to_payload``); None for a shorter one."""
    lengths = reader._BinLogStreamReader__post_header_lengths
    if not lengths or etype - 1 >= len(lengths):
        return 0
    declared = lengths[etype - 1]
    return None if declared < known else declared - known
