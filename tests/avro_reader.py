"""Reading cdc's Avro records back as a consumer does: the registry's schema, then fastavro; and into JsonConverter's form.

``decode`` fetches the writer schema by the id in the Confluent frame (from the test registry or a
real one) and decodes twice: with the logical types (decimal as ``Decimal``, date as ``date``)
and without them (the raw ints and bytes). ``as_json`` maps a raw decoded value back to the JSON
form JsonConverter writes under the Connect schema (bytes as base64, non-string-keyed maps as
``[key, value]`` pairs, float32 at float32 precision), so a test can compare it with the record's
payload exactly.
"""

from __future__ import annotations

import base64
import io
import math
import struct
from typing import Any

from brokers.schema_registry import fetch_schema
from cdc_core.schema import Schema

_schemas: dict[tuple[str, int], Any] = {}


def _strip_logical(avro: Any, keep: frozenset[str] = frozenset()) -> Any:
    """The schema with every ``logicalType`` not in ``keep`` removed (raw values on reading)."""
    if isinstance(avro, dict):
        return {k: _strip_logical(v, keep) for k, v in avro.items() if k != "logicalType" or v in keep}
    if isinstance(avro, list):
        return [_strip_logical(x, keep) for x in avro]
    return avro


def writer_schema(url: str, schema_id: int) -> Any:
    """The registry's Avro schema of ``schema_id`` (cached)."""
    key = (url, schema_id)
    if key not in _schemas:
        _schemas[key] = fetch_schema(url, schema_id)
    return _schemas[key]


def decode(url: str, data: bytes, logical_types: frozenset[str] | None = None) -> tuple[int, Any, Any]:
    """``(schema id, logical value, raw value)`` of one Confluent-framed Avro record.

    ``logical_types`` limits the logical types decoded (fastavro cannot make a ``time`` of Connect's
    ``24:00:00``, 86400000 ms); None decodes them all.
    """
    from fastavro import parse_schema, schemaless_reader

    assert data[0] == 0, f"magic byte {data[0]} is not 0"
    schema_id = int.from_bytes(data[1:5], "big")
    avro = writer_schema(url, schema_id)
    logical_schema = avro if logical_types is None else _strip_logical(avro, logical_types)
    logical = schemaless_reader(io.BytesIO(data[5:]), parse_schema(logical_schema))
    raw = schemaless_reader(io.BytesIO(data[5:]), parse_schema(_strip_logical(avro)))
    return schema_id, logical, raw


def float32(x: float) -> float:
    """``x`` at float32 precision."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def as_json(value: Any, schema: Schema) -> Any:
    """A raw decoded Avro value in JsonConverter's JSON form under ``schema``."""
    if value is None:
        return None
    kind = schema.type
    if kind == "bytes":
        return base64.b64encode(value).decode()
    if kind in ("float32", "float64"):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return float32(value) if kind == "float32" else value
    if kind == "struct":
        return {f.name: as_json(value.get(f.name), f.schema) for f in schema.fields}
    if kind == "array":
        assert schema.items is not None
        return [as_json(x, schema.items) for x in value]
    if kind == "map":
        assert schema.keys is not None and schema.values is not None
        if isinstance(value, dict):
            return {k: as_json(v, schema.values) for k, v in value.items()}
        return [[as_json(e["key"], schema.keys), as_json(e["value"], schema.values)] for e in value]
    return value


def float32_payload(value: Any, schema: Schema) -> Any:
    """A JSON payload with its float32 values at float32 precision (what Avro's float holds)."""
    if value is None:
        return None
    kind = schema.type
    if kind == "float32" and isinstance(value, float):
        return float32(value)
    if kind == "struct":
        return {f.name: float32_payload(value.get(f.name), f.schema) for f in schema.fields}
    if kind == "array":
        assert schema.items is not None
        return [float32_payload(x, schema.items) for x in value]
    if kind == "map":
        assert schema.values is not None
        if isinstance(value, dict):
            return {k: float32_payload(v, schema.values) for k, v in value.items()}
        return [[k, float32_payload(v, schema.values)] for k, v in value]
    return value
