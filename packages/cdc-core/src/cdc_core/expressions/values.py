"""The meaning of the operators on record values, as Groovy gives it (Groovy truth, numeric ``==``, null ordering).

Values are JSON-ready payloads: dicts for structs and maps, lists for arrays, str, int, float, bool, None.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from cdc_core.expressions.errors import EvaluationError

_NUMBER_TYPES = (int, float)


def truth(v: Any) -> bool:
    """Groovy truth: null, false, 0, '' and empty arrays/structs are false; everything else is true."""
    if v is True or v is False:
        return v
    if v is None:
        return False
    if isinstance(v, (int, float, str, list, dict)):
        return bool(v)
    return True


def is_number(v: Any) -> bool:
    """True for an int or float (a boolean is not a number, as in Groovy)."""
    return isinstance(v, _NUMBER_TYPES) and not isinstance(v, bool)


def equals(a: Any, b: Any) -> bool:
    """Groovy ``==``: null equals only null, numbers by value (``2 == 2.0``), booleans only booleans, else by value."""
    if a is None or b is None:
        return a is b
    ta, tb = type(a), type(b)
    if ta is tb:
        return a == b
    if ta is bool or tb is bool:
        return False
    if is_number(a) and is_number(b):
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict) or isinstance(a, list) and isinstance(b, list):
        return a == b
    return False


def compare(op: str, a: Any, b: Any, column: int) -> bool:
    """Groovy ``<``, ``<=``, ``>``, ``>=``: numbers with numbers, strings with strings, null below everything."""
    if a is None or b is None:
        c = 0 if a is b else (-1 if a is None else 1)
    elif is_number(a) and is_number(b) or isinstance(a, str) and isinstance(b, str) or (
            type(a) is bool and type(b) is bool):
        c = -1 if a < b else (1 if a > b else 0)
    else:
        raise EvaluationError(f"cannot compare {describe(a)} with {describe(b)} using '{op}'", column)
    if op == "<":
        return c < 0
    if op == "<=":
        return c <= 0
    if op == ">":
        return c > 0
    return c >= 0


def plus(a: Any, b: Any, column: int) -> Any:
    """``+``: numbers add; with a string on either side, both sides are joined as text (null as ``null``)."""
    if isinstance(a, str) or isinstance(b, str):
        return text(a) + text(b)
    if is_number(a) and is_number(b):
        return a + b
    raise EvaluationError(f"cannot add {describe(a)} and {describe(b)}", column)


def minus(a: Any, b: Any, column: int) -> Any:
    """``-``: numbers only."""
    if is_number(a) and is_number(b):
        return a - b
    raise EvaluationError(f"cannot subtract {describe(b)} from {describe(a)}", column)


def negate(a: Any, column: int) -> Any:
    """Unary ``-``: numbers only."""
    if is_number(a):
        return -a
    raise EvaluationError(f"cannot negate {describe(a)}", column)


def text(v: Any) -> str:
    """A value as Groovy's ``toString`` writes it in a concatenation (Java's doubles, ``Struct{a=1}``, ``[a, b]``)."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, str):
        return v
    if isinstance(v, float):
        return java_double(v)
    if isinstance(v, dict):  # Kafka Connect's Struct.toString leaves null fields out
        return "Struct{" + ",".join(f"{k}={text(x)}" for k, x in v.items() if x is not None) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(text(x) for x in v) + "]"
    return str(v)


def java_double(v: float) -> str:
    """Java's ``Double.toString``: ``2.0``, ``0.001``, ``1.0E7``, ``1.5E-4``, ``NaN``, ``Infinity``."""
    if v != v:
        return "NaN"
    if v in (math.inf, -math.inf):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    if 1e-3 <= abs(v) < 1e7:
        return repr(v)  # Python writes this range without an exponent, with the shortest digits
    sign, digits, exponent = Decimal(repr(v)).normalize().as_tuple()
    numerals = "".join(map(str, digits))
    return f"{'-' if sign else ''}{numerals[0]}.{numerals[1:] or '0'}E{len(numerals) - 1 + int(exponent)}"


def describe(v: Any) -> str:
    """A short description of a value for an error message (its type, and a short value)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return f"the boolean {'true' if v else 'false'}"
    if isinstance(v, str):
        shown = v if len(v) <= 40 else v[:37] + "..."
        return f"the string {shown!r}"
    if is_number(v):
        return f"the number {v}"
    if isinstance(v, dict):
        return "a struct"
    if isinstance(v, list):
        return "an array"
    return f"a {type(v).__name__}"
