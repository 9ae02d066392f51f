"""A pure decoder of pgoutput logical replication messages (protocol version 1, plus v2 streams).

``decode(buf)`` turns one message (the payload of an XLogData frame) into a ``NamedTuple``.
Tuple column values are ``None`` (SQL NULL), ``UNAVAILABLE`` (an unchanged TOASTed value the
log did not carry), ``str`` (text format) or ``bytes`` (binary format). Inside a v2 streamed
transaction (between ``StreamStart`` and ``StreamStop``) data messages carry a transaction id;
decode those with ``decode_streamed(buf)``, which returns ``(xid, message)``.

This is a hot path: every decoder works on ``bytes`` with precompiled ``struct.Struct``s.
"""

from __future__ import annotations

from struct import Struct
from struct import error as StructError
from typing import Any, Callable, NamedTuple, Union

from cdc_core.events import UNAVAILABLE

__all__ = [
    "PG_EPOCH_OFFSET_US",
    "Begin",
    "Commit",
    "Delete",
    "Insert",
    "Message",
    "Origin",
    "PgOutputError",
    "PgOutputMessage",
    "Relation",
    "RelationColumn",
    "StreamAbort",
    "StreamCommit",
    "StreamStart",
    "StreamStop",
    "TRUNCATE_CASCADE",
    "TRUNCATE_RESTART_IDENTITY",
    "Truncate",
    "TypeMessage",
    "Update",
    "decode",
    "decode_streamed",
]

PG_EPOCH_OFFSET_US = 946_684_800 * 1_000_000
"""Microseconds between the Unix epoch and the PostgreSQL epoch (2000-01-01 UTC)."""

TRUNCATE_CASCADE = 1
"""``Truncate.options`` bit: TRUNCATE ... CASCADE."""
TRUNCATE_RESTART_IDENTITY = 2
"""``Truncate.options`` bit: TRUNCATE ... RESTART IDENTITY."""


class PgOutputError(ValueError):
    """Raised for a malformed or truncated pgoutput message."""


class Begin(NamedTuple):
    """Start of a transaction; ``commit_ts_us`` is Unix-epoch microseconds."""

    final_lsn: int
    commit_ts_us: int
    xid: int


class Commit(NamedTuple):
    """End of a transaction; ``end_lsn`` is the position to confirm once it is processed."""

    flags: int
    commit_lsn: int
    end_lsn: int
    commit_ts_us: int


class Origin(NamedTuple):
    """The replication origin a transaction came from."""

    lsn: int
    name: str


class RelationColumn(NamedTuple):
    """One column of a ``Relation`` message."""

    is_key: bool
    name: str
    type_oid: int
    type_modifier: int


class Relation(NamedTuple):
    """A table's description, sent before its first change in a session and after DDL."""

    oid: int
    namespace: str
    name: str
    replica_identity: str
    columns: tuple[RelationColumn, ...]


class TypeMessage(NamedTuple):
    """A data type's name, sent before a column of a non-builtin type is used."""

    oid: int
    namespace: str
    name: str


class Insert(NamedTuple):
    """A new row."""

    relation_oid: int
    new: tuple[Any, ...]


class Update(NamedTuple):
    """A changed row; ``old_kind`` is ``'K'`` (key columns), ``'O'`` (whole row) or None."""

    relation_oid: int
    old_kind: str | None
    old: tuple[Any, ...] | None
    new: tuple[Any, ...]


class Delete(NamedTuple):
    """A deleted row; ``old_kind`` is ``'K'`` (key columns only) or ``'O'`` (whole row)."""

    relation_oid: int
    old_kind: str
    old: tuple[Any, ...]


class Truncate(NamedTuple):
    """A TRUNCATE of one or more tables; ``options`` bit 1 is CASCADE, bit 2 RESTART IDENTITY."""

    options: int
    relation_oids: tuple[int, ...]


class Message(NamedTuple):
    """A logical decoding message from ``pg_logical_emit_message``."""

    transactional: bool
    lsn: int
    prefix: str
    content: bytes


class StreamStart(NamedTuple):
    """Start of a block of a streamed (in-progress) transaction (protocol v2)."""

    xid: int
    first_segment: bool


class StreamStop(NamedTuple):
    """End of a block of a streamed transaction (protocol v2)."""


class StreamCommit(NamedTuple):
    """Commit of a streamed transaction (protocol v2); ``commit_ts_us`` is Unix-epoch µs."""

    xid: int
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_ts_us: int


class StreamAbort(NamedTuple):
    """Abort of a streamed (sub)transaction (protocol v2)."""

    xid: int
    subxid: int


PgOutputMessage = Union[
    Begin, Commit, Origin, Relation, TypeMessage, Insert, Update, Delete, Truncate, Message,
    StreamStart, StreamStop, StreamCommit, StreamAbort,
]  # fmt: skip

_U8 = Struct(">B")
_U16 = Struct(">H")
_U32 = Struct(">I")
_BEGIN = Struct(">QqI")
_COMMIT = Struct(">BQQq")
_U64 = Struct(">Q")
_U8_U64 = Struct(">BQ")
_U32_U8 = Struct(">IB")
_U32_U32 = Struct(">II")
_U32_U8_U64_U64_I64 = Struct(">IBQQq")
_COLUMN_TAIL = Struct(">Ii")
_U8_I16 = Struct(">Bh")

_u32_from = _U32.unpack_from
_u16_from = _U16.unpack_from

_new = tuple.__new__  # builds NamedTuples without the generated __new__'s extra Python call

_K, _O, _N = 0x4B, 0x4F, 0x4E  # 'K', 'O', 'N'
_TEXT, _NULL, _TOAST, _BINARY = 0x74, 0x6E, 0x75, 0x62  # 't', 'n', 'u', 'b'


class _Malformed(Exception):
    """Internal: raised by decoders with the offset at which decoding failed."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(offset, reason)
        self.offset = offset
        self.reason = reason


def _tuple(buf: bytes, off: int) -> tuple[tuple[Any, ...], int]:
    """Decode TupleData at ``off``; return the values and the offset after them."""
    start = off
    try:
        ncols = _u16_from(buf, off)[0]
        off += 2
        end_of_buf = len(buf)
        values: list[Any] = [None] * ncols
        for i in range(ncols):
            kind = buf[off]
            off += 1
            if kind == _TEXT:
                end = off + 4 + _u32_from(buf, off)[0]
                if end > end_of_buf:
                    raise _Malformed(off, f"text value of {end - off - 4} bytes is truncated")
                values[i] = buf[off + 4 : end].decode()
                off = end
            elif kind == _NULL:
                pass
            elif kind == _TOAST:
                values[i] = UNAVAILABLE
            elif kind == _BINARY:
                end = off + 4 + _u32_from(buf, off)[0]
                if end > end_of_buf:
                    raise _Malformed(off, f"binary value of {end - off - 4} bytes is truncated")
                values[i] = buf[off + 4 : end]
                off = end
            else:
                raise _Malformed(off - 1, f"unknown tuple value kind {kind!r} in column {i}")
        return tuple(values), off
    except _Malformed:
        raise
    except (StructError, IndexError):
        raise _Malformed(off, f"tuple data starting at byte {start} is truncated") from None
    except UnicodeDecodeError as exc:
        raise _Malformed(off, f"text value is not valid UTF-8: {exc.reason}") from None


_TEXT_ASCII = "s[off + 5 : end]"  # the message is ASCII: its latin-1 text sliced (one object per value)
_TEXT_UTF8 = "buf[off + 5 : end].decode()"
_COLUMN = """\
{p}kind = buf[off]
{p}if kind == 116:
{p}    end = off + 5 + u32(buf, off + 1)[0]
{p}    v{i} = {text}
{p}    off = end
{p}elif kind == 110:
{p}    v{i} = None
{p}    off += 1
{p}elif kind == 117:
{p}    v{i} = UNAVAILABLE
{p}    off += 1
{p}elif kind == 98:
{p}    end = off + 5 + u32(buf, off + 1)[0]
{p}    v{i} = buf[off + 5 : end]
{p}    off = end
{p}else:
{p}    return slow(buf)"""
_INSERT_DECODERS: dict[int, Callable[[bytes], tuple[Any, ...]]] = {}


def _insert_values(buf: bytes) -> tuple[Any, ...]:
    """An Insert message's new tuple, or ``decode``'s error."""
    return decode_insert(buf)[1]


def insert_decoder(ncols: int) -> Callable[[bytes], tuple[Any, ...]]:
    """``decode_insert``'s values (``buf``: an Insert message, bytes) by a function generated once per column count.

    The streaming hot path: one unrolled function per row instead of a loop over a list, and for an
    ASCII message (the common case) each text value a slice of the message decoded once, instead of a
    bytes slice and its decoding. A message with another column count, a truncated or malformed one
    goes to ``decode_insert``, which decodes it or raises ``decode``'s very error.
    """
    found = _INSERT_DECODERS.get(ncols)
    if found is not None:
        return found
    if not 0 < ncols <= 1664:  # PostgreSQL's MaxTupleAttributeNumber; decode_insert takes the rest
        return _insert_values
    names = ", ".join(f"v{i}" for i in range(ncols)) + ("," if ncols == 1 else "")
    src = [
        "def values(buf):",
        "    try:",
        f"        if buf[0] != 73 or buf[5] != 78 or u16(buf, 6)[0] != {ncols}:",  # 'I', 'N', the column count
        "            return slow(buf)",
        "        off = 8",
        "        if buf.isascii():",
        "            s = buf.decode('latin-1')",
        *[_COLUMN.format(p=" " * 12, i=i, text=_TEXT_ASCII) for i in range(ncols)],
        "        else:",
        *[_COLUMN.format(p=" " * 12, i=i, text=_TEXT_UTF8) for i in range(ncols)],
        "        if off > len(buf):",  # a value runs past the end (its slice was cut short)
        "            return slow(buf)",
        f"        return ({names})",
        "    except Exception:",
        "        return slow(buf)",
    ]
    namespace = {"u16": _u16_from, "u32": _u32_from, "UNAVAILABLE": UNAVAILABLE, "slow": _insert_values}
    exec(compile("\n".join(src), f"<pgoutput insert of {ncols} columns>", "exec"), namespace)
    found = _INSERT_DECODERS[ncols] = namespace["values"]
    return found


def _cstring(buf: bytes, off: int) -> tuple[str, int]:
    """Decode a NUL-terminated string at ``off``; return it and the offset after the NUL."""
    end = buf.find(0, off)
    if end < 0:
        raise _Malformed(off, "string is not NUL-terminated")
    try:
        return buf[off:end].decode(), end + 1
    except UnicodeDecodeError as exc:
        raise _Malformed(off, f"string is not valid UTF-8: {exc.reason}") from None


def _begin(buf: bytes, off: int) -> Begin:
    """Decode 'B'."""
    final_lsn, ts, xid = _BEGIN.unpack_from(buf, off)
    return _new(Begin, (final_lsn, ts + PG_EPOCH_OFFSET_US, xid))


def _commit(buf: bytes, off: int) -> Commit:
    """Decode 'C'."""
    flags, commit_lsn, end_lsn, ts = _COMMIT.unpack_from(buf, off)
    return _new(Commit, (flags, commit_lsn, end_lsn, ts + PG_EPOCH_OFFSET_US))


def _origin(buf: bytes, off: int) -> Origin:
    """Decode 'O'."""
    lsn = _U64.unpack_from(buf, off)[0]
    name, _ = _cstring(buf, off + 8)
    return Origin(lsn, name)


def _relation(buf: bytes, off: int) -> Relation:
    """Decode 'R'."""
    oid = _u32_from(buf, off)[0]
    namespace, off = _cstring(buf, off + 4)
    name, off = _cstring(buf, off)
    ident, ncols = _U8_I16.unpack_from(buf, off)
    off += 3
    columns = []
    for _ in range(ncols):
        flags = buf[off]
        colname, off = _cstring(buf, off + 1)
        type_oid, typmod = _COLUMN_TAIL.unpack_from(buf, off)
        off += 8
        columns.append(RelationColumn(bool(flags & 1), colname, type_oid, typmod))
    return Relation(oid, namespace, name, chr(ident), tuple(columns))


def _type(buf: bytes, off: int) -> TypeMessage:
    """Decode 'Y'."""
    oid = _u32_from(buf, off)[0]
    namespace, off = _cstring(buf, off + 4)
    name, _ = _cstring(buf, off)
    return TypeMessage(oid, namespace, name)


def _insert(buf: bytes, off: int) -> Insert:
    """Decode 'I'."""
    oid = _u32_from(buf, off)[0]
    if buf[off + 4] != _N:
        raise _Malformed(off + 4, f"expected 'N' before the new tuple, got {buf[off + 4]!r}")
    return _new(Insert, (oid, _tuple(buf, off + 5)[0]))


def _update(buf: bytes, off: int) -> Update:
    """Decode 'U'."""
    oid = _u32_from(buf, off)[0]
    off += 4
    marker = buf[off]
    old_kind = None
    old = None
    if marker == _K or marker == _O:
        old_kind = "K" if marker == _K else "O"
        old, off = _tuple(buf, off + 1)
        marker = buf[off]
    if marker != _N:
        raise _Malformed(off, f"expected 'K', 'O' or 'N' in an update, got {marker!r}")
    return _new(Update, (oid, old_kind, old, _tuple(buf, off + 1)[0]))


def _delete(buf: bytes, off: int) -> Delete:
    """Decode 'D'."""
    oid = _u32_from(buf, off)[0]
    marker = buf[off + 4]
    if marker == _K:
        old_kind = "K"
    elif marker == _O:
        old_kind = "O"
    else:
        raise _Malformed(off + 4, f"expected 'K' or 'O' in a delete, got {marker!r}")
    return _new(Delete, (oid, old_kind, _tuple(buf, off + 5)[0]))


def _truncate(buf: bytes, off: int) -> Truncate:
    """Decode 'T'."""
    nrels, options = _U32_U8.unpack_from(buf, off)
    off += 5
    if off + 4 * nrels > len(buf):
        raise _Malformed(off, f"{nrels} relation oids run past the end")
    return Truncate(options, Struct(f">{nrels}I").unpack_from(buf, off))


def _message(buf: bytes, off: int) -> Message:
    """Decode 'M'."""
    flags, lsn = _U8_U64.unpack_from(buf, off)
    prefix, off = _cstring(buf, off + 9)
    length = _u32_from(buf, off)[0]
    off += 4
    if off + length > len(buf):
        raise _Malformed(off, f"content of {length} bytes runs past the end")
    return Message(bool(flags & 1), lsn, prefix, buf[off : off + length])


def _stream_start(buf: bytes, off: int) -> StreamStart:
    """Decode 'S'."""
    xid, first = _U32_U8.unpack_from(buf, off)
    return StreamStart(xid, first == 1)


def _stream_stop(buf: bytes, off: int) -> StreamStop:
    """Decode 'E'."""
    return StreamStop()


def _stream_commit(buf: bytes, off: int) -> StreamCommit:
    """Decode 'c'."""
    xid, flags, commit_lsn, end_lsn, ts = _U32_U8_U64_U64_I64.unpack_from(buf, off)
    return StreamCommit(xid, flags, commit_lsn, end_lsn, ts + PG_EPOCH_OFFSET_US)


def _stream_abort(buf: bytes, off: int) -> StreamAbort:
    """Decode 'A'."""
    xid, subxid = _U32_U32.unpack_from(buf, off)
    return StreamAbort(xid, subxid)


_DECODERS: dict[int, Callable[[bytes, int], Any]] = {
    ord("B"): _begin,
    ord("C"): _commit,
    ord("O"): _origin,
    ord("R"): _relation,
    ord("Y"): _type,
    ord("I"): _insert,
    ord("U"): _update,
    ord("D"): _delete,
    ord("T"): _truncate,
    ord("M"): _message,
    ord("S"): _stream_start,
    ord("E"): _stream_stop,
    ord("c"): _stream_commit,
    ord("A"): _stream_abort,
}

_XID_PREFIXED = frozenset(ord(k) for k in "RYIUDTM")


def _error(buf: bytes, kind: int, offset: int, reason: str) -> PgOutputError:
    """Build the error for a message of kind byte ``kind`` that failed at ``offset``."""
    label = repr(chr(kind)) if 32 <= kind < 127 else f"0x{kind:02x}"
    return PgOutputError(
        f"malformed pgoutput message of kind {label} ({len(buf)} bytes) at byte offset "
        f"{offset}: {reason}"
    )


def decode(buf: bytes | bytearray | memoryview) -> PgOutputMessage:
    """Decode one pgoutput message; raise ``PgOutputError`` if it is malformed or truncated."""
    if type(buf) is not bytes:
        buf = bytes(buf)
    try:
        kind = buf[0]
    except IndexError:
        raise PgOutputError("empty pgoutput message (byte offset 0): no kind byte") from None
    try:
        return _DECODERS[kind](buf, 1)
    except KeyError:
        raise _error(buf, kind, 0, "unknown message kind") from None
    except _Malformed as exc:
        raise _error(buf, kind, exc.offset, exc.reason) from None
    except (StructError, IndexError):
        raise _error(buf, kind, len(buf), "message is truncated") from None


def decode_insert(buf: bytes) -> tuple[int, tuple[Any, ...]]:
    """``decode`` of an Insert message (kind byte 'I', outside a stream block) as ``(relation_oid, new)``.

    The streaming hot path: one call instead of ``decode``'s dispatch and NamedTuple; a malformed
    message raises the same ``PgOutputError`` as ``decode``.
    """
    try:
        if buf[5] == _N:
            return _u32_from(buf, 1)[0], _tuple(buf, 6)[0]
    except (_Malformed, StructError, IndexError):
        pass
    msg = decode(buf)  # raises the precise error
    return msg.relation_oid, msg.new


def decode_streamed(buf: bytes | bytearray | memoryview) -> tuple[int | None, PgOutputMessage]:
    """Decode a message sent inside a v2 stream block; return ``(xid, message)``.

    Data messages (R, Y, I, U, D, T, M) carry the transaction id after the kind byte there;
    for other kinds the xid is None.
    """
    if type(buf) is not bytes:
        buf = bytes(buf)
    try:
        kind = buf[0]
    except IndexError:
        raise PgOutputError("empty pgoutput message (byte offset 0): no kind byte") from None
    if kind not in _XID_PREFIXED:
        return None, decode(buf)
    try:
        xid = _u32_from(buf, 1)[0]
        return xid, _DECODERS[kind](buf, 5)
    except _Malformed as exc:
        raise _error(buf, kind, exc.offset, exc.reason) from None
    except (StructError, IndexError):
        raise _error(buf, kind, len(buf), "message is truncated") from None
