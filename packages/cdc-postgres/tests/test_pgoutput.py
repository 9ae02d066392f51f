"""Tests for the pgoutput decoder on hand-built messages (per the protocol documentation)."""

from __future__ import annotations

import struct

import pytest

from cdc_core.events import UNAVAILABLE
from cdc_postgres.pgoutput import (
    PG_EPOCH_OFFSET_US,
    Begin,
    Commit,
    Delete,
    Insert,
    Message,
    Origin,
    PgOutputError,
    Relation,
    RelationColumn,
    StreamAbort,
    StreamCommit,
    StreamStart,
    StreamStop,
    Truncate,
    TypeMessage,
    Update,
    decode,
    decode_insert,
    decode_streamed,
    insert_decoder,
)


def u8(v: int) -> bytes:
    """Int8."""
    return struct.pack(">B", v)


def i16(v: int) -> bytes:
    """Int16."""
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    """Int32 (signed)."""
    return struct.pack(">i", v)


def u32(v: int) -> bytes:
    """Int32 (unsigned: oids, xids)."""
    return struct.pack(">I", v)


def i64(v: int) -> bytes:
    """Int64 (signed: timestamps)."""
    return struct.pack(">q", v)


def u64(v: int) -> bytes:
    """Int64 (unsigned: LSNs)."""
    return struct.pack(">Q", v)


def cstr(s: str) -> bytes:
    """NUL-terminated string."""
    return s.encode() + b"\0"


def text(s: str) -> bytes:
    """A 't' TupleData column."""
    raw = s.encode()
    return b"t" + i32(len(raw)) + raw


def binary(b: bytes) -> bytes:
    """A 'b' TupleData column."""
    return b"b" + i32(len(b)) + b


def tupledata(*cols: bytes) -> bytes:
    """TupleData: column count then the columns."""
    return i16(len(cols)) + b"".join(cols)


PG_TS = 757_382_400_123_456  # 2024-01-01T00:00:00.123456Z in PostgreSQL-epoch microseconds
UNIX_TS = PG_TS + PG_EPOCH_OFFSET_US


def test_begin_converts_commit_timestamp_to_unix_epoch() -> None:
    """Begin carries final LSN, Unix-epoch commit time and xid."""
    msg = decode(b"B" + u64(0x16_B374D848) + i64(PG_TS) + u32(4_000_000_000))
    assert msg == Begin(final_lsn=0x16_B374D848, commit_ts_us=UNIX_TS, xid=4_000_000_000)
    assert UNIX_TS == 1_704_067_200_123_456


def test_commit() -> None:
    """Commit carries flags, commit LSN, end LSN and the Unix-epoch timestamp."""
    msg = decode(b"C" + u8(0) + u64(100) + u64(148) + i64(PG_TS))
    assert msg == Commit(flags=0, commit_lsn=100, end_lsn=148, commit_ts_us=UNIX_TS)


def test_origin_and_type() -> None:
    """Origin and Type messages decode their strings."""
    assert decode(b"O" + u64(42) + cstr("node_a")) == Origin(42, "node_a")
    assert decode(b"Y" + u32(16400) + cstr("public") + cstr("mood")) == TypeMessage(
        16400, "public", "mood"
    )


def test_relation_with_key_flags_and_typmods() -> None:
    """Relation lists columns with key flag, type oid and modifier; identity is a letter."""
    body = (
        u32(16385)
        + cstr("inventory")
        + cstr("customers")
        + b"d"
        + i16(3)
        + u8(1) + cstr("id") + u32(23) + i32(-1)
        + u8(0) + cstr("name") + u32(1043) + i32(259)
        + u8(0) + cstr("näme ünicode") + u32(25) + i32(-1)
    )  # fmt: skip
    msg = decode(b"R" + body)
    assert msg == Relation(
        oid=16385,
        namespace="inventory",
        name="customers",
        replica_identity="d",
        columns=(
            RelationColumn(True, "id", 23, -1),
            RelationColumn(False, "name", 1043, 259),
            RelationColumn(False, "näme ünicode", 25, -1),
        ),
    )


def test_insert_values_null_unchanged_toast_text_and_binary() -> None:
    """Tuple values: 'n' is None, 'u' UNAVAILABLE, 't' str (UTF-8), 'b' bytes."""
    new = tupledata(text("1"), b"n", b"u", text("grüße €"), binary(b"\x00\xff"), text(""))
    msg = decode(b"I" + u32(16385) + b"N" + new)
    assert isinstance(msg, Insert)
    assert msg.relation_oid == 16385
    assert msg.new == ("1", None, UNAVAILABLE, "grüße €", b"\x00\xff", "")
    assert msg.new[2] is UNAVAILABLE
    assert isinstance(msg.new, tuple)


def test_decode_accepts_memoryview_and_bytearray() -> None:
    """Payloads handed out as memoryview slices decode the same as bytes."""
    raw = b"xxxx" + b"I" + u32(7) + b"N" + tupledata(text("a"))
    assert decode(memoryview(raw)[4:]) == Insert(7, ("a",))
    assert decode(bytearray(raw[4:])) == Insert(7, ("a",))


def test_update_without_old_tuple() -> None:
    """An update with neither 'K' nor 'O' has old_kind and old None."""
    msg = decode(b"U" + u32(5) + b"N" + tupledata(text("1"), text("x")))
    assert msg == Update(5, None, None, ("1", "x"))


@pytest.mark.parametrize("kind", ["K", "O"])
def test_update_with_old_tuple(kind: str) -> None:
    """'K' (key changed) and 'O' (replica identity full) updates carry the old tuple."""
    old = tupledata(text("1"), b"n") if kind == "K" else tupledata(text("1"), text("old"))
    msg = decode(b"U" + u32(5) + kind.encode() + old + b"N" + tupledata(text("2"), b"u"))
    assert isinstance(msg, Update)
    assert msg.old_kind == kind
    assert msg.old == (("1", None) if kind == "K" else ("1", "old"))
    assert msg.new == ("2", UNAVAILABLE)


@pytest.mark.parametrize("kind", ["K", "O"])
def test_delete(kind: str) -> None:
    """A delete carries the key ('K') or full ('O') old tuple."""
    msg = decode(b"D" + u32(9) + kind.encode() + tupledata(text("3"), b"n"))
    assert msg == Delete(9, kind, ("3", None))


def test_truncate_options_and_relations() -> None:
    """Truncate lists relation oids; options bit 1 is CASCADE, bit 2 RESTART IDENTITY."""
    msg = decode(b"T" + u32(2) + u8(3) + u32(16385) + u32(16390))
    assert msg == Truncate(options=3, relation_oids=(16385, 16390))
    assert decode(b"T" + u32(1) + u8(0) + u32(1)) == Truncate(0, (1,))


def test_logical_message() -> None:
    """'M' carries the transactional flag, LSN, prefix and raw content."""
    msg = decode(b"M" + u8(1) + u64(77) + cstr("cdc") + i32(3) + b"\x01\x02\x03")
    assert msg == Message(transactional=True, lsn=77, prefix="cdc", content=b"\x01\x02\x03")
    msg = decode(b"M" + u8(0) + u64(78) + cstr("p") + i32(0))
    assert msg == Message(False, 78, "p", b"")


def test_stream_messages() -> None:
    """v2 stream start/stop/commit/abort decode into simple tuples."""
    assert decode(b"S" + u32(900) + u8(1)) == StreamStart(900, True)
    assert decode(b"S" + u32(900) + u8(0)) == StreamStart(900, False)
    assert decode(b"E") == StreamStop()
    assert decode(b"c" + u32(900) + u8(0) + u64(10) + u64(20) + i64(PG_TS)) == StreamCommit(
        900, 0, 10, 20, UNIX_TS
    )
    assert decode(b"A" + u32(900) + u32(901)) == StreamAbort(900, 901)


def test_decode_streamed_strips_xid_from_data_messages() -> None:
    """Inside a stream block data messages carry an xid after the kind byte."""
    xid, msg = decode_streamed(b"I" + u32(900) + u32(5) + b"N" + tupledata(text("1")))
    assert (xid, msg) == (900, Insert(5, ("1",)))
    assert decode_streamed(b"E") == (None, StreamStop())


@pytest.mark.parametrize(
    ("buf", "kind", "offset"),
    [
        (b"B" + u64(1) + i64(2), "'B'", 17),  # xid missing
        (b"C" + u8(0) + u64(1), "'C'", 10),
        (b"I" + u32(1) + b"N" + i16(2) + text("a"), "'I'", 14),  # second column missing
        (b"I" + u32(1) + b"N" + i16(1) + b"t" + i32(10) + b"abc", "'I'", 9),  # short value
        (b"R" + u32(1) + b"public", "'R'", 5),  # unterminated string
        (b"T" + u32(3) + u8(0) + u32(1), "'T'", 6),  # 3 oids announced, 1 present
        (b"M" + u8(1) + u64(1) + cstr("p") + i32(100) + b"x", "'M'", 16),
    ],
)
def test_truncated_input_names_kind_and_offset(buf: bytes, kind: str, offset: int) -> None:
    """Truncated messages raise PgOutputError naming the kind byte and byte offset."""
    with pytest.raises(PgOutputError) as info:
        decode(buf)
    message = str(info.value)
    assert f"kind {kind}" in message
    assert f"byte offset {offset}" in message


@pytest.mark.parametrize("buf", [
    b"I" + u32(7) + b"N" + i16(3) + text("a") + b"n" + b"u",
    b"I" + u32(1) + b"N" + i16(2) + text("a"),  # second column missing
    b"I" + u32(1) + b"N" + i16(1) + b"t" + i32(10) + b"abc",  # short value
    b"I" + u32(1) + b"N" + i16(1) + b"t" + i32(2) + b"\xc3",  # text cut mid-character
    b"I" + u32(1) + b"X" + i16(0),  # no 'N'
    b"I" + u32(1),
])
def test_the_streaming_insert_fast_path_decodes_and_fails_as_decode(buf: bytes) -> None:
    """``decode_insert`` (the streaming hot path) gives decode's values, or raises decode's very error."""
    try:
        expected = decode(buf)
    except PgOutputError as e:
        with pytest.raises(PgOutputError) as info:
            decode_insert(buf)
        assert str(info.value) == str(e)
    else:
        assert decode_insert(buf) == (expected.relation_oid, expected.new)


@pytest.mark.parametrize("buf", [
    b"I" + u32(7) + b"N" + i16(3) + text("a") + b"n" + b"u",
    b"I" + u32(7) + b"N" + i16(3) + text("é€") + binary(b"\x00\xff") + text(""),  # not ASCII, binary
    b"I" + u32(7) + b"N" + i16(3) + text("x" * 300) + b"n" + text("7"),  # a length byte outside ASCII
    b"I" + u32(7) + b"N" + i16(3) + text("a") + text("b") + text("c") + b"trailing",
    b"I" + u32(7) + b"N" + i16(2) + text("a") + text("b"),  # another column count
    b"I" + u32(1) + b"N" + i16(3) + text("a"),  # columns missing
    b"I" + u32(1) + b"N" + i16(3) + text("a") + b"n" + b"t" + i32(10) + b"abc",  # short last value
    b"I" + u32(1) + b"N" + i16(3) + b"t" + i32(2) + b"\xc3" + b"nn",  # text cut mid-character
    b"I" + u32(1) + b"N" + i16(3) + b"t" + i32(2) + b"\xff\xfe" + b"nn",  # not UTF-8
    b"I" + u32(1) + b"N" + i16(3) + b"x" + b"nn",  # unknown value kind
    b"I" + u32(1) + b"X" + i16(3) + b"nnn",  # no 'N'
])
def test_the_generated_insert_decoder_decodes_and_fails_as_decode(buf: bytes) -> None:
    """``insert_decoder(3)`` (the streaming hot path, unrolled for three columns) gives decode's values, or
    raises decode's very error, for any Insert message."""
    try:
        expected = decode(buf)
    except PgOutputError as e:
        with pytest.raises(PgOutputError) as info:
            insert_decoder(3)(buf)
        assert str(info.value) == str(e)
    else:
        assert insert_decoder(3)(buf) == expected.new


def test_unknown_tuple_value_kind() -> None:
    """An unknown TupleData value kind is reported at its own offset."""
    with pytest.raises(PgOutputError, match=r"kind 'I'.*byte offset 8.*unknown tuple value kind"):
        decode(b"I" + u32(1) + b"N" + i16(1) + b"x")


def test_bad_markers() -> None:
    """Missing 'N' in insert/update and a bad delete marker are malformed."""
    with pytest.raises(PgOutputError, match=r"kind 'I'.*byte offset 5"):
        decode(b"I" + u32(1) + b"X" + tupledata(text("a")))
    with pytest.raises(PgOutputError, match=r"kind 'U'.*byte offset 5"):
        decode(b"U" + u32(1) + b"Z" + tupledata(text("a")))
    with pytest.raises(PgOutputError, match=r"kind 'D'.*byte offset 5"):
        decode(b"D" + u32(1) + b"N" + tupledata(text("a")))


def test_invalid_utf8_text_value() -> None:
    """A 't' value that is not UTF-8 is a PgOutputError, not a UnicodeDecodeError."""
    with pytest.raises(PgOutputError, match="UTF-8"):
        decode(b"I" + u32(1) + b"N" + i16(1) + b"t" + i32(2) + b"\xff\xfe")


def test_unknown_kind_and_empty_message() -> None:
    """Unknown kinds and empty buffers are reported."""
    with pytest.raises(PgOutputError, match=r"kind 'Z'.*byte offset 0.*unknown message kind"):
        decode(b"Z\x00")
    with pytest.raises(PgOutputError, match=r"kind 0x01"):
        decode(b"\x01")
    with pytest.raises(PgOutputError, match="empty"):
        decode(b"")
