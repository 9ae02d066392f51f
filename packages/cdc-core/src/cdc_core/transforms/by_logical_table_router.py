"""``io.debezium.transforms.ByLogicalTableRouter``: several physical tables' records onto one topic.

As Debezium 3.0.7: a record whose topic fully matches ``topic.regex`` goes to ``topic.replacement``
(Java's ``$1`` groups); its key gets ``key.field.name`` (the original topic, or
``key.field.regex``/``key.field.replacement`` of it) unless ``key.enforce.uniqueness=false``, and
its key, envelope and row schemas are renamed after the new topic (``<topic>.Key``,
``<topic>.Value``, ``<topic>.Envelope``, adjusted per ``schema.name.adjustment.mode``). Tombstones
and records that are not change events keep their value. Rows are copied as Kafka's
``Struct.get`` reads them: a null in a field with a default becomes the default.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, ClassVar

from cdc_core.config import Config, Fields
from cdc_core.errors import ConfigError
from cdc_core.events import ChangeRecord
from cdc_core.naming import schema_adjuster
from cdc_core.schema import Field, Schema
from cdc_core.transforms.options import field, options, regex
from cdc_core.transforms.java_regex import java_pattern, java_replacement, replace_first
from cdc_core.transforms.schemas import copy_schema
from cdc_core.transforms.structs import default_filler

_STRING = Schema("string")

FIELDS = Fields([
    regex("topic.regex"),
    field("topic.replacement", "string", None, required=True),
    field("key.enforce.uniqueness", "boolean", True),
    regex("key.field.regex", required_=False),
    field("key.field.name", "string", "__dbz__physicalTableIdentifier"),
    field("key.field.replacement", "string", None),
    field("schema.name.adjustment.mode", "enum", "none", allowed=("none", "avro", "avro_unicode")),
    field("logical.table.cache.size", "int", 16, minimum=1),
])


class _LRU(OrderedDict):
    """A small least-recently-used map (``logical.table.cache.size`` entries)."""

    def __init__(self, size: int):
        """Start empty, holding at most ``size`` entries."""
        super().__init__()
        self.size = size

    def put(self, key: Any, value: Any) -> None:
        """Remember ``value``, forgetting the least recently used entry when full."""
        self[key] = value
        if len(self) > self.size:
            self.popitem(last=False)


class ByLogicalTableRouter:
    """Re-routes records of sharded or partitioned tables to one logical table's topic."""

    name: ClassVar[str] = "ByLogicalTableRouter"
    class_names: ClassVar[tuple[str, ...]] = ("io.debezium.transforms.ByLogicalTableRouter",)
    fields: ClassVar[Fields] = FIELDS

    def __init__(self, config: Config):
        """Compile the expressions and replacements; check key.field.regex has its replacement."""
        o = options(config, FIELDS)
        self.topic_regex = java_pattern(o["topic.regex"])
        try:
            self.topic_replacement = java_replacement(o["topic.replacement"], self.topic_regex)
        except ValueError as e:
            raise ConfigError([f"topic.replacement: {e}"]) from None
        self.enforce_uniqueness = o["key.enforce.uniqueness"]
        self.key_field_name = o["key.field.name"]
        key_regex = (o["key.field.regex"] or "").strip()
        self.key_field_regex = java_pattern(key_regex) if key_regex else None
        self.key_field_replacement = None
        if self.key_field_regex is not None:
            replacement = (o["key.field.replacement"] or "").strip()
            if not replacement:
                raise ConfigError(["key.field.replacement: must be non-empty if key.field.regex is set"])
            try:
                self.key_field_replacement = java_replacement(o["key.field.replacement"], self.key_field_regex)
            except ValueError as e:
                raise ConfigError([f"key.field.replacement: {e}"]) from None
        self.adjust = schema_adjuster(o["schema.name.adjustment.mode"])
        size = o["logical.table.cache.size"]
        self._topics: _LRU = _LRU(size)
        self._key_ids: _LRU = _LRU(size)
        self._key_schemas: dict[tuple[int, str], tuple[Schema, Schema]] = {}
        self._envelopes: dict[tuple[int, str], tuple[Schema, Schema, Any, Any]] = {}

    def _new_topic(self, topic: str) -> str | None:
        """The topic a record on ``topic`` goes to (None: it does not match)."""
        try:
            return self._topics[topic]
        except KeyError:
            found = replace_first(self.topic_regex, self.topic_replacement, topic)
            self._topics.put(topic, found)  # a topic that does not match is remembered too
            return found

    def _physical_id(self, topic: str) -> str:
        """The value of the key field for a record of ``topic``."""
        if self.key_field_regex is None:
            return topic
        found = self._key_ids.get(topic)
        if found is None:
            found = replace_first(self.key_field_regex, self.key_field_replacement, topic)  # type: ignore[arg-type]
            if found is None:
                return topic
            self._key_ids.put(topic, found)
        return found

    def _key_schema(self, old: Schema, topic: str) -> Schema:
        """The key schema renamed after the new topic, with the key field."""
        key = (id(old), topic)
        found = self._key_schemas.get(key)
        if found is not None and found[0] is old:
            return found[1]
        fields = list(old.fields)
        if self.enforce_uniqueness:
            fields.append(Field(self.key_field_name, _STRING))
        new = copy_schema(old, fields=fields, name=self.adjust(f"{topic}.Key"), default=None)
        self._key_schemas[key] = (old, new)
        return new

    def _envelope(self, old: Schema, topic: str) -> tuple[Schema, Any]:
        """The envelope schema renamed after the new topic, and the row default filler."""
        key = (id(old), topic)
        found = self._envelopes.get(key)
        if found is not None and found[0] is old:
            return found[1], found[2]
        row = old.field("before").schema
        new_row = copy_schema(row, name=self.adjust(f"{topic}.Value"), default=None)
        fields = [Field(f.name, new_row) if f.name in ("before", "after") else f for f in old.fields]
        new = copy_schema(old, fields=fields, name=self.adjust(f"{topic}.Envelope"), default=None)
        fill = default_filler(row)
        self._envelopes[key] = (old, new, fill, row)
        return new, fill

    def apply(self, record: ChangeRecord) -> ChangeRecord:
        """The record on its logical table's topic (unchanged if its topic does not match)."""
        old_topic = record.topic
        topic = self._new_topic(old_topic)
        if not topic:  # no match; an empty name is refused as Debezium does (the record stays where it is)
            return record
        key = record.key
        if key is not None and record.key_schema is not None:
            record.key_schema = self._key_schema(record.key_schema, topic)
            if self.enforce_uniqueness:
                record.key = {**key, self.key_field_name: self._physical_id(old_topic)}
        elif key is None:
            record.key_schema = None
        record.topic = topic
        value, vs = record.value, record.value_schema
        if value is None or vs is None or vs.name is None or not vs.name.endswith(".Envelope"):
            return record
        new, fill = self._envelope(vs, topic)
        if fill is not None:
            before, after = value.get("before"), value.get("after")
            value = {**value, "before": None if before is None else fill(before),
                     "after": None if after is None else fill(after)}
            record.value = value
        record.value_schema = new
        return record
