"""Java's String and number parsing as SqlServerDefaultValueConverter relies on them: what they accept and where they throw.

Debezium 2.7.4 parses SQL Server's DEFAULT texts with ``String.substring``/``indexOf`` and the JDK's
``Integer.parseInt``, ``Short.parseShort``, ``Long.parseLong``, ``Double.parseDouble``,
``Float.parseFloat``, ``new BigDecimal(String)`` and its own ``HexConverter.convertFromHex``. Python's
slicing never throws and ``int()``/``float()``/``Decimal()`` accept more (blanks, ``_``, ``inf``), so
each is reproduced here; a refusal raises ValueError (IndexError for substring), naming the text.
"""

from __future__ import annotations

import math
import re
import struct
from decimal import Decimal
from fractions import Fraction

from cdc_core.semantic import to_float32

#: Character.digit(c, 10) takes every Unicode decimal digit (Nd), as Python's \d and int() do.
_INTEGER = re.compile(r"[+-]?\d+")
#: BigDecimal(String): Character.isDigit digits, one optional point, at least one digit, an int exponent.
_BIG_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
#: FloatingDecimal.readJavaFormatString, after String.trim(): ASCII digits, an optional f/F/d/D suffix.
_JAVA_FLOAT = re.compile(r"([+-]?)(?:(NaN|Infinity)|((?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)[fFdD]?"
                         r"|(0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?\d+)[fFdD]?)", re.ASCII)
_F32 = struct.Struct("<f")
_I32 = struct.Struct("<I")
_F32_MAX = 3.4028234663852886e38
#: FLT_MAX plus half its ulp (2^104): from here a decimal rounds to infinity (FLT_MAX's last bit is odd: ties go up).
_F32_ROUNDS_TO_INFINITY = Fraction(_F32_MAX) + Fraction(2) ** 103


def substring(s: str, begin: int, end: int) -> str:
    """``s.substring(begin, end)``: IndexError where Java throws StringIndexOutOfBoundsException."""
    if begin < 0 or end > len(s) or begin > end:
        raise IndexError(f"begin {begin}, end {end}, length {len(s)} of {s!r}")
    return s[begin:end]


def char_at(s: str, index: int) -> str:
    """``s.charAt(index)``: IndexError outside the string."""
    if not 0 <= index < len(s):
        raise IndexError(f"index {index}, length {len(s)} of {s!r}")
    return s[index]


def equals_ignore_case(a: str, b: str) -> bool:
    """``a.equalsIgnoreCase(b)``: char by char, equal, or equal upper-cased, or equal lower-cased."""
    return len(a) == len(b) and all(x == y or x.upper() == y.upper() or x.lower() == y.lower() for x, y in zip(a, b))


def _integer(text: str, low: int, high: int, name: str) -> int:
    if not _INTEGER.fullmatch(text):
        raise ValueError(f'For input string: "{text}" ({name})')
    value = int(text)
    if not low <= value <= high:
        raise ValueError(f'Value out of range. Value:"{text}" ({name})')
    return value


def parse_int(text: str) -> int:
    """``Integer.parseInt``."""
    return _integer(text, -2**31, 2**31 - 1, "Integer.parseInt")


def parse_short(text: str) -> int:
    """``Short.parseShort`` (Debezium's tinyint mapper uses it too: 0..32767 pass)."""
    return _integer(text, -2**15, 2**15 - 1, "Short.parseShort")


def parse_long(text: str) -> int:
    """``Long.parseLong``."""
    return _integer(text, -2**63, 2**63 - 1, "Long.parseLong")


def big_decimal(text: str) -> Decimal:
    """``new BigDecimal(text)``: no blanks, no ``_``, no NaN/Infinity; the exponent an int."""
    m = _BIG_DECIMAL.fullmatch(text)
    exponent = re.search(r"[eE]([+-]?\d+)$", text) if m else None
    if m is None or (exponent is not None and not -2**31 <= int(exponent[1]) < 2**31):
        raise ValueError(f"Character array is missing \"exponent\" mark 'e' or 'E', or is not a number: {text!r}")
    return Decimal(text)


def _java_float_parts(text: str) -> tuple[float, Fraction | None]:
    """(the double Double.parseDouble gives, the exact value of a decimal text or None)."""
    m = _JAVA_FLOAT.fullmatch(text.strip("".join(chr(c) for c in range(33))))
    if m is None:
        raise ValueError(f'For input string: "{text}" (Double.parseDouble)')
    sign = -1.0 if m[1] == "-" else 1.0
    if m[2]:
        return (math.nan if m[2] == "NaN" else sign * math.inf), None
    if m[4]:
        return sign * float.fromhex(m[4]), None
    exact = Fraction(Decimal(m[3]))
    return math.copysign(float(exact), sign), (-exact if sign < 0 else exact)


def parse_double(text: str) -> float:
    """``Double.parseDouble``: blanks (up to U+0020) trimmed, NaN/Infinity, hex, a f/F/d/D suffix."""
    return _java_float_parts(text)[0]


def _f32_neighbours(f: float) -> list[float]:
    """The float32 values either side of the finite float32 ``f`` (and ``f``)."""
    bits = _I32.unpack(_F32.pack(f))[0]
    out = [f]
    for step in (-1, 1):
        b = bits + step if bits < 0x80000000 else bits - step
        if 0 <= b < 0x7F800000 or 0x80000000 <= b < 0xFF800000:
            out.append(_F32.unpack(_I32.pack(b))[0])
    return out


def parse_float(text: str) -> float:
    """``Float.parseFloat``: a decimal text rounded once to the nearest float32 (ties to even), as the JDK does."""
    value, exact = _java_float_parts(text)
    f = to_float32(value)
    if exact is None or exact == 0:
        return f
    if abs(exact) >= _F32_ROUNDS_TO_INFINITY:
        return math.copysign(math.inf, value)
    if math.isinf(f):
        f = math.copysign(_F32_MAX, f)
    return min(_f32_neighbours(f), key=lambda c: (abs(Fraction(c) - exact), _I32.unpack(_F32.pack(c))[0] & 1))


def from_hex(text: str) -> bytes:
    """``HexConverter.convertFromHex``: pairs of Character.digit(c, 16) digits; an odd count throws."""
    if len(text) % 2:
        raise ValueError(f"The supplied character array must contain an even number of hex chars: {text!r}")
    out = bytearray()
    for i in range(0, len(text), 2):
        pair = [_hex_digit(c, text) for c in text[i:i + 2]]
        out.append(pair[0] << 4 | pair[1])
    return bytes(out)


def _hex_digit(c: str, text: str) -> int:
    """Character.digit(c, 16): a Unicode decimal digit, or a-f/A-F (ASCII or full-width); else it throws."""
    if c.isdecimal():
        return int(c)
    for first in ("a", "A", "\uff41", "\uff21"):
        if 0 <= ord(c) - ord(first) < 6:
            return ord(c) - ord(first) + 10
    raise ValueError(f"Non-hex character {c!r} in {text!r}")
