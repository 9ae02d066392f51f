"""``org.apache.kafka.connect.transforms.InsertField$Key`` / ``$Value``: topic, partition, timestamp or a static field.

cdc's records have no Kafka partition (null, as on Debezium's source records) and no timestamp
before a sink writes them: ``timestamp.field`` takes the event's ``ts_ms`` (the envelope's, or
``source.ts_ms``), else the current time. ``offset.field`` exists only on sink records: refused.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from cdc_core.config import Config, Fields
from cdc_core.errors import ConfigError
from cdc_core.events import ChangeRecord
from cdc_core.schema import Field, Schema
from cdc_core.transforms.options import field, options
from cdc_core.transforms.schemas import basics
from cdc_core.transforms.sides import Side, variants
from cdc_core.transforms.structs import default_filler

FIELDS = Fields([
    field("topic.field"), field("partition.field"), field("offset.field"), field("timestamp.field"),
    field("static.field"), field("static.value"),
    field("replace.null.with.default", "boolean", True),
])
_TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"


def record_timestamp(record: ChangeRecord) -> int:
    """The record's timestamp in ms: its event time (``ts_ms``, else ``source.ts_ms``), else now."""
    value = record.value
    if isinstance(value, dict):
        ts = value.get("ts_ms")
        if ts is None and isinstance(value.get("source"), dict):
            ts = value["source"].get("ts_ms")
        if isinstance(ts, int):
            return ts
    return time.time_ns() // 1_000_000


def _spec(raw: str | None) -> tuple[str, bool] | None:
    """``name`` / ``name?`` (optional) / ``name!`` (required)."""
    if raw is None or raw == "":
        return None
    if raw.endswith("?"):
        return raw[:-1], True
    if raw.endswith("!"):
        return raw[:-1], False
    return raw, True


class InsertField(Side):
    """Adds the topic, partition, timestamp and/or a static string as fields."""

    fields: ClassVar[Fields] = FIELDS

    def __init__(self, config: Config):
        """Read the field specs (``name``, ``name?``, ``name!``); refuse ``offset.field``."""
        o = options(config, FIELDS)
        if o["offset.field"]:
            raise ConfigError(["offset.field: Kafka offsets exist only on sink records; cdc is a source"])
        self.topic = _spec(o["topic.field"])
        self.partition = _spec(o["partition.field"])
        self.timestamp = _spec(o["timestamp.field"])
        self.static = _spec(o["static.field"])
        self.static_value = o["static.value"]
        self.applicable = any((self.topic, self.partition, self.timestamp, self.static))
        self.replace_null = o["replace.null.with.default"]
        self._schemas: dict[int, tuple[Schema, Schema, Any]] = {}

    def _schema(self, schema: Schema) -> tuple[Schema, Any]:
        """The schema with the inserted fields, and the default filler, per input schema."""
        found = self._schemas.get(id(schema))
        if found is not None and found[0] is schema:
            return found[1], found[2]
        fields = list(schema.fields)
        for spec, type_, name in ((self.topic, "string", None), (self.partition, "int32", None),
                                  (self.timestamp, "int64", _TIMESTAMP), (self.static, "string", None)):
            if spec is not None:
                fields.append(Field(spec[0], Schema(type_, optional=spec[1], name=name, version=1 if name else None)))
        out = basics(schema, fields)
        fill = default_filler(schema) if self.replace_null else None
        self._schemas[id(schema)] = (schema, out, fill)
        return out, fill

    def _insert(self, record: ChangeRecord, out: dict[str, Any], with_schema: bool) -> None:
        """Put the configured fields into ``out``."""
        if self.topic is not None:
            out[self.topic[0]] = record.topic
        if self.partition is not None and with_schema:
            out.setdefault(self.partition[0], None)  # no Kafka partition yet
        if self.timestamp is not None:
            out[self.timestamp[0]] = record_timestamp(record)
        if self.static is not None and self.static_value is not None:
            out[self.static[0]] = self.static_value
        elif self.static is not None and with_schema:
            out.setdefault(self.static[0], None)

    def apply(self, record: ChangeRecord) -> ChangeRecord:
        """The record with the fields added (a null key or value as it is)."""
        if not self.applicable:
            return record
        schema, value = self.operating(record)
        if value is None:
            return record
        if schema is None:
            if not isinstance(value, dict):
                raise ValueError(f"InsertField needs a map in schemaless mode, got {type(value).__name__}")
            out = dict(value)
            self._insert(record, out, False)
            return self.replace(record, None, out)
        if schema.type != "struct":
            raise ValueError(f"InsertField can only operate on struct types, not {schema.type}")
        new, fill = self._schema(schema)
        out = dict(fill(value) if fill is not None else value)
        self._insert(record, out, True)
        return self.replace(record, new, out)


InsertFieldKey, InsertFieldValue = variants(InsertField, "InsertField")
