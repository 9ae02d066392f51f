"""Debezium (Kafka Connect) schemas as Spark types, and the converters from JSON payload values to them."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
from collections.abc import Callable
from typing import Any

from pyspark.sql import types as T

from cdc_core.schema import Schema

_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DATE = dt.date(1970, 1, 1)
_PRIMITIVES: dict[str, T.DataType] = {
    "int8": T.ByteType(), "int16": T.ShortType(), "int32": T.IntegerType(), "int64": T.LongType(),
    "float32": T.FloatType(), "float64": T.DoubleType(), "boolean": T.BooleanType(),
    "string": T.StringType(), "bytes": T.BinaryType(),
}
_DATES = ("io.debezium.time.Date", "org.apache.kafka.connect.data.Date")
_LOCAL_TIMESTAMPS = {"io.debezium.time.Timestamp": 1_000, "io.debezium.time.MicroTimestamp": 1,
                     "io.debezium.time.NanoTimestamp": None}
_DECIMAL = "org.apache.kafka.connect.data.Decimal"
_VARIABLE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
_ZONED = "io.debezium.time.ZonedTimestamp"
_CONNECT_TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"

Converter = Callable[[Any], Any]


def spark_type(schema: Schema) -> T.DataType:
    """The Spark type of a Connect schema (logical types by name, then the physical type)."""
    name = schema.name
    if name in _DATES:
        return T.DateType()
    if name in _LOCAL_TIMESTAMPS:
        return T.TimestampNTZType()
    if name in (_ZONED, _CONNECT_TIMESTAMP):
        return T.TimestampType()
    if name == _DECIMAL and schema.type == "bytes":
        params = schema.parameters or {}
        scale = int(params.get("scale", 0))
        precision = int(params.get("connect.decimal.precision", 38))
        precision = min(38, max(precision, scale, 1))
        return T.DecimalType(precision, min(scale, precision))
    if name == _VARIABLE_DECIMAL:
        return T.StringType()
    if schema.type == "struct":
        return T.StructType([T.StructField(f.name, spark_type(f.schema), True) for f in schema.fields])
    if schema.type == "array":
        assert schema.items is not None
        return T.ArrayType(spark_type(schema.items), True)
    if schema.type == "map":
        assert schema.keys is not None and schema.values is not None
        return T.MapType(spark_type(schema.keys), spark_type(schema.values), True)
    return _PRIMITIVES[schema.type]


def _unscaled(text: str) -> int:
    return int.from_bytes(base64.b64decode(text), "big", signed=True)


def converter(schema: Schema) -> Converter | None:
    """A function from the JSON payload value to the Python value of ``spark_type`` (None: as is)."""
    name = schema.name
    if name in _DATES:
        return lambda v: _EPOCH_DATE + dt.timedelta(days=v)
    if name in _LOCAL_TIMESTAMPS:
        per_us = _LOCAL_TIMESTAMPS[name]
        if per_us is None:
            return lambda v: _EPOCH + dt.timedelta(microseconds=v // 1000)
        return lambda v: _EPOCH + dt.timedelta(microseconds=v * per_us)
    if name == _ZONED:
        return lambda v: dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
    if name == _CONNECT_TIMESTAMP:
        return lambda v: dt.datetime.fromtimestamp(v / 1000, dt.timezone.utc)
    if name == _DECIMAL and schema.type == "bytes":
        scale = int((schema.parameters or {}).get("scale", 0))
        return lambda v: decimal.Decimal(_unscaled(v)).scaleb(-scale)
    if name == _VARIABLE_DECIMAL:
        return lambda v: str(decimal.Decimal(_unscaled(v["value"])).scaleb(-int(v["scale"])))
    if schema.type == "bytes":
        return base64.b64decode
    if schema.type == "struct":
        return struct_converter(schema)
    if schema.type == "array":
        assert schema.items is not None
        item = converter(schema.items)
        return None if item is None else (lambda v: [None if x is None else item(x) for x in v])
    if schema.type == "map":
        assert schema.values is not None
        value = converter(schema.values)
        return None if value is None else (lambda v: {k: None if x is None else value(x) for k, x in v.items()})
    return None


def struct_converter(schema: Schema) -> Converter:
    """Converts a struct payload (dict) into a dict of Spark-ready values; unknown fields are dropped."""
    fields = [(f.name, converter(f.schema)) for f in schema.fields]

    def convert(value: dict[str, Any]) -> dict[str, Any]:
        out = {}
        for name, conv in fields:
            x = value.get(name)
            out[name] = x if x is None or conv is None else conv(x)
        return out

    return convert
