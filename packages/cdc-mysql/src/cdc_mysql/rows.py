"""Decoding binlog row images: one generated decoder per table version, from TABLE_MAP metadata.

mysql-replication frames the events and parses TABLE_MAP; the row images themselves are decoded
here, straight into the intermediate values the column converters take (``cdc_mysql.types``):
no per-row dicts, no datetime objects, one generated function per table version.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from pymysqlreplication.constants import FIELD_TYPE
from pymysqlreplication.json_binary import parse_json

from cdc_core.semantic import days_from_civil

from cdc_mysql.model import ColumnDef

#: MySQL charset names to Python codecs (``None``: binary, keep bytes).
CODECS: dict[str, str | None] = {
    "utf8mb4": "utf-8", "utf8mb3": "utf-8", "utf8": "utf-8", "latin1": "cp1252", "ascii": "ascii",
    "binary": None, "ucs2": "utf-16-be", "utf16": "utf-16-be", "utf16le": "utf-16-le", "utf32": "utf-32-be",
    "cp1250": "cp1250", "cp1251": "cp1251", "cp1256": "cp1256", "cp1257": "cp1257", "cp850": "cp850",
    "cp852": "cp852", "cp866": "cp866", "latin2": "iso8859-2", "latin5": "iso8859-9", "latin7": "iso8859-13",
    "greek": "iso8859-7", "hebrew": "iso8859-8", "koi8r": "koi8-r", "koi8u": "koi8-u", "sjis": "shift_jis",
    "cp932": "cp932", "ujis": "euc-jp", "eucjpms": "euc-jp", "euckr": "euc-kr", "gbk": "gbk", "gb2312": "gb2312",
    "gb18030": "gb18030", "big5": "big5", "tis620": "tis-620", "macroman": "mac-roman", "macce": "mac-latin2",
    "armscii8": "latin-1", "keybcs2": "cp895", "dec8": "latin-1", "swe7": "latin-1", "hp8": "latin-1",
}

_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


def codec_for(charset: str | None) -> str | None:
    """The Python codec of a MySQL charset (utf-8 when unknown; None for binary)."""
    if charset is None:
        return "utf-8"
    return CODECS.get(charset.lower(), "utf-8")


def decimal_size(precision: int, scale: int) -> int:
    """Bytes of MySQL's binary DECIMAL(precision, scale)."""
    intg = precision - scale
    return intg // 9 * 4 + _DIG2BYTES[intg % 9] + scale // 9 * 4 + _DIG2BYTES[scale % 9]


def decode_decimal(data: bytes, precision: int, scale: int) -> Decimal:
    """A DECIMAL value from MySQL's binary form (``data`` holds exactly its bytes)."""
    buf = bytearray(data)
    negative = not (buf[0] & 0x80)
    buf[0] ^= 0x80
    if negative:
        buf = bytearray(b ^ 0xFF for b in buf)
    intg = precision - scale
    parts: list[str] = []
    pos = 0
    size = _DIG2BYTES[intg % 9]
    if size:
        parts.append(str(int.from_bytes(buf[pos:pos + size], "big")))
        pos += size
    for _ in range(intg // 9):
        parts.append(f"{int.from_bytes(buf[pos:pos + 4], 'big'):09d}")
        pos += 4
    integer = "".join(parts).lstrip("0") or "0"
    frac_parts: list[str] = []
    for _ in range(scale // 9):
        frac_parts.append(f"{int.from_bytes(buf[pos:pos + 4], 'big'):09d}")
        pos += 4
    rest = scale % 9
    if rest:
        frac_parts.append(f"{int.from_bytes(buf[pos:pos + _DIG2BYTES[rest]], 'big'):0{rest}d}")
    text = integer + ("." + "".join(frac_parts) if frac_parts else "")
    return Decimal(("-" if negative else "") + text)


def decimal_unscaled_code(v: str, precision: int, scale: int) -> list[str]:
    """Generated lines setting ``v`` to the unscaled int of the binary DECIMAL(precision, scale) at ``pos``.

    The digits are stored in big-endian groups (up to 9 digits in up to 4 bytes) with the sign in the
    top bit (negative values inverted), so one int read and a few shifts give the unscaled value.
    """
    intg = precision - scale
    groups: list[tuple[int, int]] = []  # (bytes, digits), most significant first
    if intg % 9:
        groups.append((_DIG2BYTES[intg % 9], intg % 9))
    groups += [(4, 9)] * (intg // 9) + [(4, 9)] * (scale // 9)
    if scale % 9:
        groups.append((_DIG2BYTES[scale % 9], scale % 9))
    size = sum(b for b, _ in groups)
    sign = 1 << (8 * size - 1)
    terms, shift, digits_after = [], 8 * size, scale + intg
    for nbytes, digits in groups:
        shift -= 8 * nbytes
        digits_after -= digits
        part = f"(x >> {shift}) & {(1 << 8 * nbytes) - 1}" if shift else f"x & {(1 << 8 * nbytes) - 1}"
        terms.append(f"({part}) * {10 ** digits_after}" if digits_after else f"({part})")
    return [f"x = from_bytes(data[pos:pos + {size}], 'big')",
            f"if x & {sign}:",
            f"    x ^= {sign}",
            f"    {v} = {' + '.join(terms) or '0'}",
            "else:",
            f"    x ^= {((1 << 8 * size) - 1) ^ sign}",
            f"    {v} = -({' + '.join(terms) or '0'})",
            f"pos += {size}"]


def _frac_bytes(fsp: int) -> int:
    return (fsp + 1) // 2


#: Days since the epoch of DATETIME2's packed year-month-day (``ymd``), filled as dates are seen: a
#: stream's rows mostly carry a few dates, so ``days_from_civil`` runs once per date, not per row.
_DATETIME_DAYS: dict[int, int] = {}
#: Fractional-second bytes and their multiplier to microseconds, per fsp (0-6).
_FRAC = tuple(((fsp + 1) // 2, (10000, 100, 1)[(fsp + 1) // 2 - 1] if fsp else 0) for fsp in range(7))


def _datetime_days(ymd: int) -> int | None:
    """Days since the epoch of a packed ``ymd`` (None for a zero month or day), remembered."""
    ym = ymd >> 5
    month, day = ym % 13, ymd & 31
    if month == 0 or day == 0:
        return None
    if len(_DATETIME_DAYS) >= 100_000:
        _DATETIME_DAYS.clear()
    days = _DATETIME_DAYS[ymd] = days_from_civil(ym // 13, month, day)
    return days


def decode_datetime2(data: bytes, pos: int, fsp: int, optional: bool) -> int | None:
    """DATETIME2 at ``pos`` as epoch microseconds (zero dates: None if optional, else 0)."""
    packed = int.from_bytes(data[pos:pos + 5], "big") - 0x8000000000
    days = _DATETIME_DAYS.get(packed >> 17)
    if days is None:
        days = _datetime_days(packed >> 17)
        if days is None:
            return None if optional else 0
    hms = packed & 0x1FFFF
    n, scale = _FRAC[fsp]
    micros = int.from_bytes(data[pos + 5:pos + 5 + n], "big") * scale if n else 0
    return days * 86_400_000_000 + ((hms >> 12) * 3600 + ((hms >> 6) & 63) * 60 + (hms & 63)) * 1_000_000 + micros


def _read_frac(data: bytes, pos: int, fsp: int) -> int:
    n = _frac_bytes(fsp)
    if not n:
        return 0
    frac = int.from_bytes(data[pos:pos + n], "big")
    return frac * (10000 if n == 1 else 100 if n == 2 else 1)


def decode_time2(data: bytes, pos: int, fsp: int) -> int:
    """TIME2 at ``pos`` as signed microseconds."""
    n = _frac_bytes(fsp)
    if n == 3:
        packed = int.from_bytes(data[pos:pos + 6], "big") - 0x800000000000
    else:
        intpart = int.from_bytes(data[pos:pos + 3], "big") - 0x800000
        frac = int.from_bytes(data[pos + 3:pos + 3 + n], "big") if n else 0
        if intpart < 0 and frac:
            intpart += 1
            frac -= 0x100 if n == 1 else 0x10000
        packed = (intpart << 24) + frac * (10000 if n == 1 else 100 if n == 2 else 0)
    neg = packed < 0
    v = -packed if neg else packed
    hms, micros = v >> 24, v & 0xFFFFFF
    total = (((hms >> 12) & 0x3FF) * 3600 + ((hms >> 6) & 0x3F) * 60 + (hms & 0x3F)) * 1_000_000 + micros
    return -total if neg else total


def decode_date(data: bytes, pos: int, optional: bool) -> int | None:
    """DATE (3 bytes) at ``pos`` as days since the epoch."""
    v = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16
    days = _DATE_DAYS.get(v)
    if days is not None:
        return days
    day, month, year = v & 31, (v >> 5) & 15, v >> 9
    if month == 0 or day == 0:
        return None if optional else 0
    if len(_DATE_DAYS) >= 100_000:
        _DATE_DAYS.clear()
    days = _DATE_DAYS[v] = days_from_civil(year, month, day)
    return days


#: Days since the epoch of DATE's 3-byte value, filled as dates are seen (as ``_DATETIME_DAYS``).
_DATE_DAYS: dict[int, int] = {}


def decode_timestamp2(data: bytes, pos: int, fsp: int, optional: bool) -> int | None:
    """TIMESTAMP2 at ``pos`` as UTC epoch microseconds.

    The zero timestamp is stored as 0 and stays the epoch, nullable column or not: Debezium's binlog
    reader makes every TIMESTAMP an instant (RowDeserializers.deserializeTimestampV2), so it writes
    ``1970-01-01T00:00:00Z`` where its snapshot (reading '0000-00-00 00:00:00' as text) writes null.
    """
    return int.from_bytes(data[pos:pos + 4], "big") * 1_000_000 + _read_frac(data, pos + 4, fsp)


def decode_datetime_v1(data: bytes, pos: int, optional: bool) -> int | None:
    """The pre-5.6 DATETIME (8-byte YYYYMMDDhhmmss) as epoch microseconds."""
    v = int.from_bytes(data[pos:pos + 8], "little")
    d, t = divmod(v, 1_000_000)
    year, md = divmod(d, 10000)
    month, day = divmod(md, 100)
    if month == 0 or day == 0:
        return None if optional else 0
    hh, ms = divmod(t, 10000)
    mi, ss = divmod(ms, 100)
    return days_from_civil(year, month, day) * 86_400_000_000 + (hh * 3600 + mi * 60 + ss) * 1_000_000


def decode_time_v1(data: bytes, pos: int) -> int:
    """The pre-5.6 TIME (3-byte signed hhmmss) as microseconds."""
    v = int.from_bytes(data[pos:pos + 3], "little", signed=True)
    neg = v < 0
    v = abs(v)
    hh, ms = divmod(v, 10000)
    mi, ss = divmod(ms, 100)
    total = (hh * 3600 + mi * 60 + ss) * 1_000_000
    return -total if neg else total


def json_text(data: bytes) -> str:
    """MySQL binary JSON as compact JSON text (how Debezium renders binlog JSON)."""
    import orjson

    if not data:
        return "null"
    value = parse_json(data[0], data[1:])
    return orjson.dumps(_jsonable(value)).decode()


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, dict):
        return {(_jsonable(k) if isinstance(k, bytes) else k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, Decimal):
        return float(value)
    return value


# --------------------------------------------------------------------------------- generated decoders

RowDecoder = Callable[[bytes, int, int], list[tuple[Any, ...]]]


class SchemaMismatch(Exception):
    """The TABLE_MAP's columns do not fit the model's definition of the table."""


def compile_decoder(table_columns: Sequence[Any], defs: Sequence[ColumnDef]) -> RowDecoder:
    """Generate ``decode(data, pos, end) -> [row tuple, ...]`` for full row images of one table version.

    ``table_columns`` are mysql-replication's TABLE_MAP column descriptions (types and metadata),
    ``defs`` the model's columns in the same order (charsets, enum labels, nullability).
    """
    if len(table_columns) != len(defs):
        raise SchemaMismatch(f"the binlog has {len(table_columns)} columns, the schema {len(defs)}")
    env: dict[str, Any] = {
        "unpack_from": struct.unpack_from, "from_bytes": int.from_bytes, "Decimal": Decimal,
        "decode_decimal": decode_decimal, "decode_datetime2": decode_datetime2, "decode_time2": decode_time2,
        "decode_date": decode_date, "decode_timestamp2": decode_timestamp2, "json_text": json_text,
        "decode_datetime_v1": decode_datetime_v1, "decode_time_v1": decode_time_v1,
    }
    n = len(defs)
    nbytes = (n + 7) // 8
    lines = ["def image(data, pos):", f"    nulls = from_bytes(data[pos:pos + {nbytes}], 'little')", f"    pos += {nbytes}"]
    names = []
    for i, (tc, cd) in enumerate(zip(table_columns, defs)):
        v = f"v{i}"
        names.append(v)
        body = _column_code(i, tc, cd, env)
        lines.append(f"    if nulls & {1 << i}:")
        lines.append(f"        {v} = None")
        lines.append("    else:")
        lines.extend("        " + line for line in body)
    lines.append(f"    return ({', '.join(names)}{',' if n == 1 else ''}), pos")
    lines += [
        "def decode(data, pos, end, images=1):",
        "    rows = []",
        "    append = rows.append",
        "    while pos < end:",
        "        row, pos = image(data, pos)",
        "        append(row)",
        "    return rows",
    ]
    exec(compile("\n".join(lines), "<cdc binlog row decoder>", "exec"), env)
    return env["decode"]


def _column_code(i: int, tc: Any, cd: ColumnDef, env: dict[str, Any]) -> list[str]:
    t = tc.type
    v = f"v{i}"
    unsigned = cd.unsigned
    opt = cd.optional
    if t == FIELD_TYPE.TINY:
        if unsigned:
            return [f"{v} = data[pos]", "pos += 1"]
        return [f"{v} = data[pos]", f"if {v} > 127: {v} -= 256", "pos += 1"]
    if t == FIELD_TYPE.SHORT:
        return [f"{v} = unpack_from('<{'H' if unsigned else 'h'}', data, pos)[0]", "pos += 2"]
    if t == FIELD_TYPE.INT24:
        return [f"{v} = from_bytes(data[pos:pos + 3], 'little', signed={not unsigned})", "pos += 3"]
    if t == FIELD_TYPE.LONG:
        return [f"{v} = unpack_from('<{'I' if unsigned else 'i'}', data, pos)[0]", "pos += 4"]
    if t == FIELD_TYPE.LONGLONG:
        return [f"{v} = unpack_from('<{'Q' if unsigned else 'q'}', data, pos)[0]", "pos += 8"]
    if t == FIELD_TYPE.FLOAT:
        return [f"{v} = unpack_from('<f', data, pos)[0]", "pos += 4"]
    if t == FIELD_TYPE.DOUBLE:
        return [f"{v} = unpack_from('<d', data, pos)[0]", "pos += 8"]
    if t == FIELD_TYPE.YEAR:
        return [f"{v} = data[pos]", f"if {v}: {v} += 1900", "pos += 1"]
    if t == FIELD_TYPE.NEWDECIMAL:  # the unscaled int: what Kafka's Decimal needs, without a Decimal in between
        return decimal_unscaled_code(v, tc.precision, tc.decimals)
    if t in (FIELD_TYPE.VARCHAR, FIELD_TYPE.VAR_STRING, FIELD_TYPE.STRING):
        width = 2 if tc.max_length > 255 else 1
        return _string_code(v, width, cd, env, pad=cd.type_name == "BINARY")
    if t in (FIELD_TYPE.BLOB, FIELD_TYPE.GEOMETRY, FIELD_TYPE.JSON, FIELD_TYPE.TINY_BLOB, FIELD_TYPE.MEDIUM_BLOB,
             FIELD_TYPE.LONG_BLOB):
        width = tc.length_size
        if t == FIELD_TYPE.JSON:
            return [f"ln = from_bytes(data[pos:pos + {width}], 'little')", f"pos += {width}",
                    f"{v} = json_text(data[pos:pos + ln])", "pos += ln"]
        if t == FIELD_TYPE.GEOMETRY:
            return [f"ln = from_bytes(data[pos:pos + {width}], 'little')", f"pos += {width}",
                    f"{v} = data[pos:pos + ln]", "pos += ln"]
        return _string_code(v, width, cd, env)
    if t == FIELD_TYPE.ENUM:
        labels = tuple(cd.enum_values or ())
        env[f"labels{i}"] = ("",) + labels
        return [f"{v} = labels{i}[from_bytes(data[pos:pos + {tc.size}], 'little')]", f"pos += {tc.size}"]
    if t == FIELD_TYPE.SET:
        labels = tuple(cd.enum_values or ())
        env[f"labels{i}"] = labels
        return [f"m = from_bytes(data[pos:pos + {tc.size}], 'little')", f"pos += {tc.size}",
                f"{v} = ','.join([x for k, x in enumerate(labels{i}) if m >> k & 1])"]
    if t == FIELD_TYPE.BIT:
        size = (tc.bits + 7) // 8
        return [f"{v} = data[pos:pos + {size}]", f"pos += {size}"]
    if t == FIELD_TYPE.DATE:
        return [f"{v} = decode_date(data, pos, {opt})", "pos += 3"]
    if t == FIELD_TYPE.DATETIME2:
        return [f"{v} = decode_datetime2(data, pos, {tc.fsp}, {opt})", f"pos += {5 + _frac_bytes(tc.fsp)}"]
    if t == FIELD_TYPE.TIME2:
        return [f"{v} = decode_time2(data, pos, {tc.fsp})", f"pos += {3 + _frac_bytes(tc.fsp)}"]
    if t == FIELD_TYPE.TIMESTAMP2:
        return [f"{v} = decode_timestamp2(data, pos, {tc.fsp}, {opt})", f"pos += {4 + _frac_bytes(tc.fsp)}"]
    if t == FIELD_TYPE.TIMESTAMP:
        return [f"{v} = unpack_from('<I', data, pos)[0] * 1000000", "pos += 4"]  # zero: the epoch, as TIMESTAMP2
    if t == FIELD_TYPE.DATETIME:
        return [f"{v} = decode_datetime_v1(data, pos, {opt})", "pos += 8"]
    if t == FIELD_TYPE.TIME:
        return [f"{v} = decode_time_v1(data, pos)", "pos += 3"]
    raise SchemaMismatch(f"column {cd.name!r} has binlog type {t}, which cdc cannot decode")


def _string_code(v: str, width: int, cd: ColumnDef, env: dict[str, Any], pad: bool = False) -> list[str]:
    binary = cd.type_name in ("BINARY", "VARBINARY", "TINYBLOB", "BLOB", "MEDIUMBLOB", "LONGBLOB")
    codec = None if binary else codec_for(cd.charset)
    head = (["ln = data[pos]", "pos += 1"] if width == 1
            else [f"ln = from_bytes(data[pos:pos + {width}], 'little')", f"pos += {width}"])
    if codec is None:
        return head + [f"{v} = data[pos:pos + ln]", "pos += ln"]
    return head + [f"{v} = data[pos:pos + ln].decode({codec!r}, 'replace')", "pos += ln"]
