"""Builds yboutput message streams to YugabyteDB's documented format (pgoutput's protocol; ``u`` for an omitted column).

The layout is PostgreSQL's logical replication protocol (``logicalrep_write_*``), which YugabyteDB
reuses; its only addition is writing a column a change omits (REPLICA IDENTITY CHANGE) as ``u``.
"""

from __future__ import annotations

import struct
from typing import Any

from cdc_postgres.replication import XLogData

OMITTED = object()
INT4, VARCHAR, TEXT = 23, 1043, 25


def _cstr(s: str) -> bytes:
    """A NUL-terminated string."""
    return s.encode() + b"\0"


def tuple_data(values: list[Any]) -> bytes:
    """TupleData: ``t`` text, ``n`` NULL, ``u`` omitted."""
    out = struct.pack(">H", len(values))
    for v in values:
        if v is OMITTED:
            out += b"u"
        elif v is None:
            out += b"n"
        else:
            data = str(v).encode()
            out += b"t" + struct.pack(">I", len(data)) + data
    return out


def relation(oid: int, schema: str, table: str, identity: str, columns: list[tuple[str, int, bool]]) -> bytes:
    """'R': the table's columns (name, type oid, part of the identity)."""
    out = b"R" + struct.pack(">I", oid) + _cstr(schema) + _cstr(table) + identity.encode() + struct.pack(">h", len(columns))
    for name, type_oid, key in columns:
        out += bytes([1 if key else 0]) + _cstr(name) + struct.pack(">Ii", type_oid, -1)
    return out


def begin(final_lsn: int, xid: int, ts_pg_us: int = 0) -> bytes:
    """'B'."""
    return b"B" + struct.pack(">QqI", final_lsn, ts_pg_us, xid)


def commit(commit_lsn: int, end_lsn: int, ts_pg_us: int = 0) -> bytes:
    """'C'."""
    return b"C" + struct.pack(">BQQq", 0, commit_lsn, end_lsn, ts_pg_us)


def insert(oid: int, new: list[Any]) -> bytes:
    """'I' with a new tuple."""
    return b"I" + struct.pack(">I", oid) + b"N" + tuple_data(new)


def update(oid: int, new: list[Any], old: list[Any] | None = None, old_kind: str = "K") -> bytes:
    """'U' with an optional old (``K`` key or ``O`` whole row) tuple."""
    head = b"U" + struct.pack(">I", oid)
    if old is not None:
        head += old_kind.encode() + tuple_data(old)
    return head + b"N" + tuple_data(new)


def delete(oid: int, old: list[Any], old_kind: str = "K") -> bytes:
    """'D' with the old key (``K``) or row (``O``)."""
    return b"D" + struct.pack(">I", oid) + old_kind.encode() + tuple_data(old)


def frames(messages: list[bytes], first_lsn: int = 1000) -> list[XLogData]:
    """XLogData frames, one LSN apart."""
    return [XLogData(first_lsn + i, first_lsn + i, 0, m) for i, m in enumerate(messages)]


class WireConnection:
    """A ReplicationConnection that hands out the frames it was given, once."""

    def __init__(self, data: list[XLogData]):
        self.data = data
        self.server_wal_end = 0

    def read(self, timeout: float) -> list[XLogData]:
        """Every frame not yet handed out."""
        out, self.data = self.data, []
        return out

    def send_status(self, reply_requested: bool = False) -> None:
        """Nothing to confirm to."""
