"""Confluent's AvroConverter: Avro binary in the Confluent wire format, schemas registered in a schema registry.

Each key or value is written as the magic byte 0, the schema's 4-byte big-endian registry id,
then the Avro binary encoding of the payload (fastavro). Schemas are mapped from Connect as
Confluent's AvroData maps them (``avro_schema``) and registered under the subject the subject
name strategy gives (TopicNameStrategy by default: ``<topic>-key`` / ``<topic>-value``).

Per (topic, schema object) the Avro schema, fastavro's parsed schema, the payload function and
the framed id are built once and cached, so a batch costs one fastavro call per record and the
registry is asked once per schema. As AvroData writes ``Struct.get`` (a null field whose schema
has a default is written as that default) unless ``ignore.default.for.nullables`` is true, the
payload goes through the same default filling as JsonConverter's ``replace.null.with.default``.
A null value (tombstone) or key is written as null.

Options (the converter's properties without ``key.converter.`` / ``debezium.format.value.``):
``schema.registry.url`` (required; several comma-separated), ``auto.register.schemas`` (true),
``key.subject.name.strategy`` / ``value.subject.name.strategy`` (TopicNameStrategy,
RecordNameStrategy, TopicRecordNameStrategy), ``basic.auth.credentials.source`` /
``basic.auth.user.info``, ``connect.meta.data`` (true), ``scrub.invalid.names`` (false),
``ignore.default.for.nullables`` (false). Apicurio's own converter protocol is not implemented:
``apicurio.registry.url`` is refused, naming Apicurio's Confluent-compatible API instead.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any, ClassVar

import orjson

from cdc_core.config.fields import InvalidValue, _parse_bool
from cdc_core.errors import ConfigError
from cdc_core.events import ChangeRecord
from cdc_core.schema import Schema
from cdc_core.serializers.avro_datum import datum_function
from cdc_core.serializers.avro_schema import AvroSchemaBuilder
from cdc_core.serializers.defaults import payload_filler
from cdc_core.serializers.formats import FormatSerializer
from cdc_core.serializers.schema_registry import SchemaRegistryClient

#: Subject name strategies (Confluent's class names, and their short names).
STRATEGIES = {
    "io.confluent.kafka.serializers.subject.TopicNameStrategy": "topic",
    "io.confluent.kafka.serializers.subject.RecordNameStrategy": "record",
    "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy": "topic-record",
    "TopicNameStrategy": "topic", "RecordNameStrategy": "record", "TopicRecordNameStrategy": "topic-record",
}
#: AvroConverter options read here.
OPTIONS = frozenset({
    "schema.registry.url", "auto.register.schemas", "key.subject.name.strategy", "value.subject.name.strategy",
    "basic.auth.credentials.source", "basic.auth.user.info", "connect.meta.data", "scrub.invalid.names",
    "ignore.default.for.nullables",
})
#: AvroConverter options accepted without effect on what is written.
ACCEPTED = frozenset({"schemas.cache.config", "enhanced.avro.schema.support", "normalize.schemas",
                      "auto.register.schemas.timeout.ms", "avro.remove.java.properties",
                      "schema.registry.ssl.endpoint.identification.algorithm"})
#: AvroConverter options that would change what is written and are not implemented.
REFUSED = {
    "use.latest.version": "true",
    "apicurio.registry.url": None,
}

MAGIC = b"\x00"


def _bool(options: Mapping[str, Any], name: str, default: bool, prefix: str, problems: list[str]) -> bool:
    raw = options.get(name)
    if raw is None or raw == "":
        return default
    try:
        return _parse_bool(str(raw))
    except InvalidValue as e:
        problems.append(f"{prefix}{name}: {e}")
        return default


class AvroConverter:
    """One side (key or value) of Confluent's AvroConverter, over a batch of records."""

    def __init__(self, is_key: bool, options: Mapping[str, Any], prefix: str = "",
                 registry: SchemaRegistryClient | None = None):
        """``options`` are the converter's properties (prefix removed); ``prefix`` spells them in errors."""
        self.is_key = is_key
        problems: list[str] = []
        for name, refused_value in REFUSED.items():
            raw = options.get(name)
            if raw is not None and (refused_value is None or str(raw).strip().lower() == refused_value):
                if name == "apicurio.registry.url":
                    problems.append(f"{prefix}{name}: Apicurio's own converter protocol is not supported; use "
                                    f"{prefix}schema.registry.url with Apicurio's Confluent-compatible API "
                                    "(<apicurio>/apis/ccompat/v7), which Confluent's wire format reaches")
                else:
                    problems.append(f"{prefix}{name}: {raw!r} is not supported (cdc always writes the record's own schema)")
        url = options.get("schema.registry.url")
        if registry is None and (url is None or not str(url).strip()):
            problems.append(f"{prefix}schema.registry.url: is required for the Avro format (the schema registry's URL)")
        auto_register = _bool(options, "auto.register.schemas", True, prefix, problems)
        self.meta = _bool(options, "connect.meta.data", True, prefix, problems)
        self.scrub = _bool(options, "scrub.invalid.names", False, prefix, problems)
        self.ignore_defaults = _bool(options, "ignore.default.for.nullables", False, prefix, problems)
        strategy_name = f"{'key' if is_key else 'value'}.subject.name.strategy"
        raw_strategy = str(options.get(strategy_name) or "TopicNameStrategy").strip()
        self.strategy = STRATEGIES.get(raw_strategy)
        if self.strategy is None:
            problems.append(f"{prefix}{strategy_name}: {raw_strategy!r} is not a supported subject name strategy; "
                            "choose TopicNameStrategy, RecordNameStrategy or TopicRecordNameStrategy")
        source = str(options.get("basic.auth.credentials.source") or "URL").strip().upper()
        user_info = options.get("basic.auth.user.info")
        if source not in ("URL", "USER_INFO"):
            problems.append(f"{prefix}basic.auth.credentials.source: {source!r} is not supported; choose URL or USER_INFO")
        if problems:
            raise ConfigError(problems)
        self.registry = registry or SchemaRegistryClient(
            str(url), user_info=str(user_info) if source == "USER_INFO" and user_info else None,
            auto_register=auto_register)
        self.suffix = "-key" if is_key else "-value"
        #: (topic, id(schema)) -> (schema kept alive, framed id, parsed schema, payload function, filler).
        self._cache: dict[tuple[str, int], tuple[Schema, bytes, Any, Any, Any]] = {}

    # -- per schema -----------------------------------------------------------------------------

    def subject(self, topic: str, schema: Schema) -> str:
        """The registry subject of ``schema`` on ``topic`` (the subject name strategy)."""
        if self.strategy == "topic":
            return topic + self.suffix
        name = schema.name or "io.confluent.connect.avro.ConnectDefault"
        if self.strategy == "record":
            return name
        return f"{topic}-{name}"

    def avro_schema(self, schema: Schema) -> Any:
        """The Avro schema (JSON-ready) written for ``schema``."""
        return AvroSchemaBuilder(meta=self.meta, scrub=self.scrub).build(schema)

    def _entry(self, topic: str, schema: Schema) -> tuple[Schema, bytes, Any, Any, Any]:
        key = (topic, id(schema))
        entry = self._cache.get(key)
        if entry is None or entry[0] is not schema:
            from fastavro import parse_schema

            avro = self.avro_schema(schema)
            text = orjson.dumps(avro).decode()
            schema_id = self.registry.id_for(self.subject(topic, schema), text)
            parsed = parse_schema(avro)
            filler = None if self.ignore_defaults else payload_filler(schema, True)
            entry = (schema, MAGIC + schema_id.to_bytes(4, "big"), parsed, datum_function(schema, self.scrub), filler)
            self._cache[key] = entry
        return entry

    def schema_id(self, topic: str, schema: Schema) -> int:
        """The registry id of ``schema`` on ``topic`` (registering it if needed)."""
        return int.from_bytes(self._entry(topic, schema)[1][1:], "big")

    # -- writing --------------------------------------------------------------------------------

    def encode(self, topic: str, schema: Schema | None, payload: Any) -> bytes | None:
        """One key or value in the Confluent wire format (None for a null payload)."""
        if payload is None:
            return None
        if schema is None:
            raise ValueError(f"topic {topic}: a payload without a schema cannot be written as Avro")
        from fastavro import schemaless_writer

        _, framed, parsed, datum, filler = self._entry(topic, schema)
        if filler is not None:
            payload = filler(payload)
        if datum is not None:
            payload = datum(payload)
        buf = io.BytesIO()
        buf.write(framed)
        schemaless_writer(buf, parsed, payload)
        return buf.getvalue()

    def __call__(self, records: list[ChangeRecord]) -> list[bytes | None]:
        """The keys (or values) of a batch."""
        from fastavro import schemaless_writer

        out: list[bytes | None] = []
        append = out.append
        entry_of = self._entry
        key = self.is_key
        last: Any = None
        last_topic = None
        framed = parsed = datum = filler = None
        for r in records:
            schema, payload = (r.key_schema, r.key) if key else (r.value_schema, r.value)
            if payload is None:
                append(None)
                continue
            if schema is None:
                raise ValueError(f"topic {r.topic}: a {'key' if key else 'value'} without a schema cannot be written as Avro")
            if schema is not last or r.topic != last_topic:
                _, framed, parsed, datum, filler = entry_of(r.topic, schema)
                last, last_topic = schema, r.topic
            if filler is not None:
                payload = filler(payload)
            if datum is not None:
                payload = datum(payload)
            buf = io.BytesIO()
            buf.write(framed)
            schemaless_writer(buf, parsed, payload)
            append(buf.getvalue())
        return out

    def close(self) -> None:
        """Close the registry client."""
        self.registry.close()


class AvroSerializer(FormatSerializer):
    """Keys and values both as Avro (``debezium.format.key=avro`` and ``debezium.format.value=avro``)."""

    name: ClassVar[str] = "avro"

    def __init__(self, key_schemas_enable: bool = True, value_schemas_enable: bool = True, *,
                 key_replace_null_with_default: bool = True, value_replace_null_with_default: bool = True,
                 options: Mapping[str, Any] | None = None):
        """``options``: the AvroConverter's properties for both sides (``schema.registry.url`` is required)."""
        opts = dict(options or {})
        super().__init__(AvroConverter(True, opts, "debezium.format.key."),
                         AvroConverter(False, opts, "debezium.format.value."), binary=True)
