"""Kafka Connect's JsonConverter: ``{"schema": ..., "payload": ...}`` or the bare payload."""

from __future__ import annotations

from typing import Any, ClassVar

import orjson

from cdc_core.events import ChangeRecord
from cdc_core.schema import Schema
from cdc_core.spi.sink import SinkRecord

_dumps = orjson.dumps


def _with_schema(schema: Schema | None, payload: Any) -> bytes | None:
    # JsonConverter returns null for a null schema with a null value (tombstones, keyless tables).
    if payload is None and schema is None:
        return None
    schema_json = schema.json_bytes() if schema is not None else b"null"
    return b"".join((b'{"schema":', schema_json, b',"payload":', _dumps(payload), b"}"))


def _bare(schema: Schema | None, payload: Any) -> bytes | None:
    if payload is None:
        return None
    return _dumps(payload)


class JsonSerializer:
    """Writes keys and values exactly as JsonConverter does, with schemas on or off.

    The schema JSON of each Schema object is rendered once and reused (``Schema.json_bytes``);
    payloads are already JSON-ready, so each value is a single orjson call.
    Known difference: Java writes doubles >= 1e7 as ``1.0E7``; orjson writes ``10000000.0``.
    Both parse to the same number.
    """

    name: ClassVar[str] = "json"

    def __init__(self, key_schemas_enable: bool = True, value_schemas_enable: bool = True):
        self._key = _with_schema if key_schemas_enable else _bare
        self._value = _with_schema if value_schemas_enable else _bare

    def serialize(self, records: list[ChangeRecord]) -> list[SinkRecord]:
        """Serialize a batch of records."""
        key, value = self._key, self._value
        return [
            SinkRecord(r.topic, key(r.key_schema, r.key), value(r.value_schema, r.value), r.headers)
            for r in records
        ]
