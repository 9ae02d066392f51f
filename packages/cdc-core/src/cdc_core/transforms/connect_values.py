"""Reading and writing Connect values in their JSON form (as cdc's payloads hold them) for Cast and MaskField."""

from __future__ import annotations

import base64
import struct
from decimal import Decimal
from typing import Any

from cdc_core.schema import Schema

DECIMAL = "org.apache.kafka.connect.data.Decimal"
INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


def wrap(n: int, bits: int) -> int:
    """Java's narrowing of an integer to ``bits`` (two's complement wrap-around)."""
    n &= (1 << bits) - 1
    return n - (1 << bits) if n >> (bits - 1) else n


def to_float32(x: float) -> float:
    """The nearest float32 value (Java's ``(float)``)."""
    return struct.unpack("f", struct.pack("f", x))[0]


def decimal_of(payload: str, schema: Schema) -> Decimal:
    """A Connect Decimal's value from its JSON form (base64 of the unscaled two's-complement bytes)."""
    scale = int((schema.parameters or {}).get("scale", "0"))
    unscaled = int.from_bytes(base64.b64decode(payload), "big", signed=True)
    return Decimal(unscaled).scaleb(-scale)


def java_double_string(x: float, float32: bool = False) -> str:
    """``Double.toString`` / ``Float.toString``: plain between 1e-3 and 1e7, else ``d.dddE±n``."""
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    if float32:
        text = next(t for t in (f"{x:.{p}g}" for p in range(1, 10)) if to_float32(float(t)) == x)
        digits = repr(float(text))
    else:
        digits = repr(x)
    if x == 0:
        return "-0.0" if str(x).startswith("-") else "0.0"
    if 1e-3 <= abs(x) < 1e7:
        value = float(digits)
        text = repr(value) if not float32 else digits
        return text if "e" not in text else format(Decimal(text), "f")
    mantissa, _, exponent = f"{Decimal(digits):E}".partition("E")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0")
        if mantissa.endswith("."):
            mantissa += "0"
    else:
        mantissa += ".0"
    return f"{mantissa}E{int(exponent)}"


def kind(schema: Schema) -> str:
    """The value kind of a schema: ``decimal`` for Connect's Decimal, else its Connect type."""
    if schema.name == DECIMAL:
        return "decimal"
    return schema.type


def as_python(value: Any, schema: Schema) -> Any:
    """A JSON-form value as the Java object Kafka's transforms see (Decimal for decimals; the rest as is)."""
    if value is not None and schema.name == DECIMAL:
        return decimal_of(value, schema)
    return value
