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
        if self._key is _with_schema and self._value is _with_schema:
            return _serialize_with_schemas(records)
        key, value = self._key, self._value
        return [
            SinkRecord(r.topic, key(r.key_schema, r.key), value(r.value_schema, r.value), r.headers)
            for r in records
        ]


def _serialize_with_schemas(records: list[ChangeRecord]) -> list[SinkRecord]:
    """``_with_schema`` for keys and values of a batch, without a Python call per record.

    Each schema's ``{"schema":...,"payload":`` prefix is made once per batch (records of a batch
    share their schema objects, which the batch keeps alive, so their ids are safe keys).
    """
    prefixes: dict[int, bytes] = {}
    out: list[SinkRecord] = []
    append = out.append
    dumps, join, new = _dumps, b"".join, tuple.__new__
    last_ks = last_vs = _NO_SCHEMA
    kp = vp = b""
    for r in records:
        ks, vs, key, value = r.key_schema, r.value_schema, r.key, r.value
        if ks is not last_ks:
            kp = prefixes.get(id(ks)) or prefixes.setdefault(id(ks), _prefix(ks))
            last_ks = ks
        if vs is not last_vs:
            vp = prefixes.get(id(vs)) or prefixes.setdefault(id(vs), _prefix(vs))
            last_vs = vs
        append(new(SinkRecord, (
            r.topic,
            None if key is None and ks is None else join((kp, dumps(key), b"}")),
            None if value is None and vs is None else join((vp, dumps(value), b"}")),
            r.headers,
        )))
    return out


_NO_SCHEMA = object()


def _prefix(schema: Schema | None) -> bytes:
    """``{"schema":<schema JSON>,"payload":`` (a null schema for schemaless payloads)."""
    return b"".join((b'{"schema":', schema.json_bytes() if schema is not None else b"null", b',"payload":'))
