"""Kafka Connect's JsonConverter: ``{"schema": ..., "payload": ...}`` or the bare payload."""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import orjson

from cdc_core.config.fields import InvalidValue, _parse_bool
from cdc_core.errors import ConfigError
from cdc_core.events import ChangeRecord
from cdc_core.schema import Schema
from cdc_core.serializers.defaults import payload_filler
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


def _converter(schemas_enable: bool, replace: bool) -> Callable[[Schema | None, Any], bytes | None]:
    """One side (key or value) of JsonConverter: framing, and the payload's defaults per ``replace``."""
    frame = _with_schema if schemas_enable else _bare

    def convert(schema: Schema | None, payload: Any) -> bytes | None:
        filler = payload_filler(schema, replace)
        return frame(schema, payload if filler is None else filler(payload))

    return convert


class JsonSerializer:
    """Writes keys and values exactly as JsonConverter does, with schemas on or off.

    The schema JSON of each Schema object is rendered once and reused (``Schema.json_bytes``);
    payloads are already JSON-ready, so each value is a single orjson call. As JsonConverter's
    ``replace.null.with.default`` (on by default, per side), a null whose schema has a default is
    written as the default (``cdc_core.serializers.defaults``; nothing is done for schemas
    without defaults).
    Known difference: Java writes doubles >= 1e7 as ``1.0E7``; orjson writes ``10000000.0``.
    Both parse to the same number.
    """

    name: ClassVar[str] = "json"

    def __init__(self, key_schemas_enable: bool = True, value_schemas_enable: bool = True, *,
                 key_replace_null_with_default: bool = True, value_replace_null_with_default: bool = True):
        #: ``schemas.enable`` of keys and of values.
        self.schemas_enable = (key_schemas_enable, value_schemas_enable)
        self._schemas = key_schemas_enable and value_schemas_enable
        self._replace = (key_replace_null_with_default, value_replace_null_with_default)
        self._key = _converter(key_schemas_enable, key_replace_null_with_default)
        self._value = _converter(value_schemas_enable, value_replace_null_with_default)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> JsonSerializer:
        """The serializer Kafka Connect's worker properties describe: ``key.converter.schemas.enable``,
        ``value.converter.schemas.enable``, ``key.converter.replace.null.with.default`` and
        ``value.converter.replace.null.with.default`` (each true when unset)."""
        flags, problems = {}, []
        for name in CONVERTER_PROPERTIES:
            raw = config.get(name)
            try:
                flags[name] = True if raw is None or raw == "" else _parse_bool(str(raw))
            except InvalidValue as e:
                problems.append(f"{name}: {e}")
        if problems:
            raise ConfigError(problems)
        key_schemas, value_schemas, key_replace, value_replace = (flags[n] for n in CONVERTER_PROPERTIES)
        return cls(key_schemas, value_schemas, key_replace_null_with_default=key_replace,
                   value_replace_null_with_default=value_replace)

    def serialize(self, records: list[ChangeRecord]) -> list[SinkRecord]:
        """Serialize a batch of records."""
        if self._schemas:
            return _serialize_with_schemas(records, *self._replace)
        if not any(self.schemas_enable):
            return _serialize_bare(records, *self._replace)
        key, value = self._key, self._value
        return [
            SinkRecord(r.topic, key(r.key_schema, r.key), value(r.value_schema, r.value), r.headers)
            for r in records
        ]


    def line_parts(self, records: list[ChangeRecord], prefix: bytes, between: bytes,
                   end: bytes) -> tuple[list[bytes], array, array] | None:
        """Records of one topic without headers as the pieces of lines ``prefix key between value end``.

        For a line sink's block (``cdc_core.record_block``): the same key and value bytes as
        ``serialize``, with no SinkRecord and no joined key or value in between. Returns the pieces,
        each record's key length (-1: no key, the line says null) and the line ends (from 0), or None
        where this does not apply (schemas off on a side, several topics, headers, a null value).
        """
        if not self._schemas or not records:
            return None
        return _line_parts_with_schemas(records, prefix, between, end, *self._replace)


#: The converter properties ``from_config`` reads (Kafka Connect's worker spelling).
CONVERTER_PROPERTIES = (
    "key.converter.schemas.enable",
    "value.converter.schemas.enable",
    "key.converter.replace.null.with.default",
    "value.converter.replace.null.with.default",
)


def _serialize_with_schemas(records: list[ChangeRecord], key_replace: bool = True,
                            value_replace: bool = True) -> list[SinkRecord]:
    """``_with_schema`` for keys and values of a batch, without a Python call per record.

    Each schema's ``{"schema":...,"payload":`` prefix and payload filler (None for a schema
    without defaults) are found once per batch (records of a batch share their schema objects,
    which the batch keeps alive, so their ids are safe keys).
    """
    key_frames: dict[int, tuple[bytes, Any]] = {}
    value_frames: dict[int, tuple[bytes, Any]] = {}
    out: list[SinkRecord] = []
    append = out.append
    dumps, join, new = _dumps, b"".join, tuple.__new__
    last_ks = last_vs = _NO_SCHEMA
    kp = vp = b""
    kf = vf = None
    for r in records:
        ks, vs, key, value = r.key_schema, r.value_schema, r.key, r.value
        if ks is not last_ks:
            kp, kf = key_frames.get(id(ks)) or key_frames.setdefault(id(ks), _frame(ks, key_replace))
            last_ks = ks
        if vs is not last_vs:
            vp, vf = value_frames.get(id(vs)) or value_frames.setdefault(id(vs), _frame(vs, value_replace))
            last_vs = vs
        if kf is not None:
            key = kf(key)
        if vf is not None:
            value = vf(value)
        append(new(SinkRecord, (
            r.topic,
            None if key is None and ks is None else join((kp, dumps(key), b"}")),
            None if value is None and vs is None else join((vp, dumps(value), b"}")),
            r.headers,
        )))
    return out


def _serialize_bare(records: list[ChangeRecord], key_replace: bool = True,
                    value_replace: bool = True) -> list[SinkRecord]:
    """``_bare`` for keys and values of a batch, without a Python call per record (as ``_serialize_with_schemas``)."""
    key_fillers: dict[int, Any] = {}
    value_fillers: dict[int, Any] = {}
    out: list[SinkRecord] = []
    append = out.append
    dumps, new, filler = _dumps, tuple.__new__, payload_filler
    last_ks = last_vs = _NO_SCHEMA
    kf = vf = None
    for r in records:
        ks, vs, key, value = r.key_schema, r.value_schema, r.key, r.value
        if ks is not last_ks:
            kf = key_fillers[id(ks)] if id(ks) in key_fillers else key_fillers.setdefault(id(ks), filler(ks, key_replace))
            last_ks = ks
        if vs is not last_vs:
            vf = (value_fillers[id(vs)] if id(vs) in value_fillers
                  else value_fillers.setdefault(id(vs), filler(vs, value_replace)))
            last_vs = vs
        if kf is not None:
            key = kf(key)
        if vf is not None:
            value = vf(value)
        append(new(SinkRecord, (
            r.topic,
            None if key is None else dumps(key),
            None if value is None else dumps(value),
            r.headers,
        )))
    return out


_NO_SCHEMA = object()


def _line_parts_with_schemas(records: list[ChangeRecord], prefix: bytes, between: bytes, end: bytes,
                             key_replace: bool, value_replace: bool) -> tuple[list[bytes], array, array] | None:
    """``JsonSerializer.line_parts`` with schemas on both sides (the framing of ``_serialize_with_schemas``)."""
    key_frames: dict[int, tuple[bytes, Any]] = {}
    value_frames: dict[int, tuple[bytes, Any]] = {}
    parts: list[bytes] = []
    extend = parts.extend
    key_lens, ends = array("q"), array("q", [0])
    key_len, line_end = key_lens.append, ends.append
    dumps = _dumps
    topic = records[0].topic
    close_between, close_end = b"}" + between, b"}" + end
    null_between = b"null" + between
    fixed_line = len(prefix) + len(close_between) + len(close_end)
    fixed_keyless = len(prefix) + len(null_between) + len(close_end)
    last_ks = last_vs = _NO_SCHEMA
    kp = vp = b""
    kf = vf = None
    at = 0
    for r in records:
        ks, vs, key, value = r.key_schema, r.value_schema, r.key, r.value
        if r.topic != topic or r.headers or vs is None or value is None:
            return None
        if ks is not last_ks:
            kp, kf = key_frames.get(id(ks)) or key_frames.setdefault(id(ks), _frame(ks, key_replace))
            last_ks = ks
        if vs is not last_vs:
            vp, vf = value_frames.get(id(vs)) or value_frames.setdefault(id(vs), _frame(vs, value_replace))
            last_vs = vs
        if kf is not None:
            key = kf(key)
        if vf is not None:
            value = vf(value)
        vd = dumps(value)
        if key is None and ks is None:
            extend((prefix, null_between, vp, vd, close_end))
            key_len(-1)
            at += fixed_keyless + len(vp) + len(vd)
        else:
            kd = dumps(key)
            extend((prefix, kp, kd, close_between, vp, vd, close_end))
            n = len(kp) + len(kd) + 1
            key_len(n)
            at += fixed_line + n - 1 + len(vp) + len(vd)
        line_end(at)
    return parts, key_lens, ends


def _frame(schema: Schema | None, replace: bool) -> tuple[bytes, Any]:
    """The prefix and payload filler of a schema."""
    return _prefix(schema), payload_filler(schema, replace)


def _prefix(schema: Schema | None) -> bytes:
    """``{"schema":<schema JSON>,"payload":`` (a null schema for schemaless payloads)."""
    return b"".join((b'{"schema":', schema.json_bytes() if schema is not None else b"null", b',"payload":'))


if os.environ.get("CDC_CHECK_JSON"):  # the test suite's grammar check (cdc_core.serializers.checking)
    from cdc_core.serializers.checking import install

    install(JsonSerializer)
