"""Debezium's outbox EventRouter SMT: each row inserted in an outbox table becomes an event on its own topic.

As ``io.debezium.transforms.outbox.EventRouter`` (Debezium 2.7) does, for each record whose value
schema is a change event envelope (others, such as heartbeats, pass unchanged):

- tombstones and deletes are dropped; an update is dropped with a warning (``table.op.invalid.behavior``
  ``warn``), an error logged (``error``), or stops the engine (``fatal``);
- the topic is the ``route.by.field`` column's value, rewritten by ``route.topic.regex`` /
  ``route.topic.replacement`` (Kafka's RegexRouter: unchanged when the regex does not match);
- the key is the ``table.field.event.key`` column (its schema the column's), the ``id`` header the
  ``table.field.event.id`` column; ``table.fields.additional.placement`` adds columns as headers or
  envelope fields (``column:header|envelope[:alias]``);
- the value is the ``table.field.event.payload`` column as it is (with the column's schema) when no
  column is placed in the envelope, else a struct ``{payload, <envelope fields>}`` named
  ``<after schema namespace>.<routed value>.Value``; ``table.field.event.schema.version`` sets its
  version. ``route.tombstone.on.empty.payload``: a null or blank payload gives a tombstone.
- ``table.expand.json.payload`` turns a JSON text payload into a struct (``outbox_json``).

Not carried: the Kafka record timestamp (``table.field.event.timestamp``) and Kafka partition
(``partition`` placement): cdc's records have neither yet; both are accepted with a warning.
A column the configuration names but the table lacks stops the engine, as in Debezium.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field as dataclass_field
from typing import Any, ClassVar

from cdc_core.config import Config
from cdc_core.config.fields import InvalidValue, _parse_bool
from cdc_core.errors import ConfigError, ConnectorError
from cdc_core.events import ChangeRecord
from cdc_core.schema import STRING, Field, Schema
from cdc_core.transforms.java_regex import java_pattern, java_replacement
from cdc_core.transforms.outbox_json import JsonExpander, JsonExpansionError

log = logging.getLogger("cdc.transforms.outbox")

DEFAULTS = {
    "table.field.event.id": "id",
    "table.field.event.key": "aggregateid",
    "table.field.event.type": "type",
    "table.field.event.payload": "payload",
    "table.field.event.payload.id": "aggregateid",
    "route.by.field": "aggregatetype",
    "route.topic.regex": "(?<routedByValue>.*)",
    "route.topic.replacement": "outbox.event.${routedByValue}",
}
_BOOLEANS = {"route.tombstone.on.empty.payload": False, "table.expand.json.payload": False,
             "table.fields.additional.error.on.missing": True}
_ENUMS = {"table.op.invalid.behavior": ("warn", "error", "fatal"),
          "table.json.payload.null.behavior": ("ignore", "optional_bytes")}
_OTHER = frozenset({"type", "table.field.event.timestamp", "table.field.event.schema.version",
                    "table.fields.additional.placement", "debezium.op.invalid.behavior", "predicate", "negate",
                    "field.name.adjustment.mode"})
#: The characters Java's String.trim() removes (a blank payload, for ``route.tombstone.on.empty.payload``).
_JAVA_BLANK = "".join(chr(i) for i in range(33))
#: The most value schemas kept (Debezium's cache holds 10,000).
MAX_SCHEMAS = 10_000


@dataclass(frozen=True)
class AdditionalField:
    """One ``table.fields.additional.placement`` entry: a column, where it goes, and its name there."""

    column: str
    placement: str
    alias: str


class EventRouter:
    """``io.debezium.transforms.outbox.EventRouter``: outbox table inserts as events (see the module docstring)."""

    name: ClassVar[str] = "outbox"
    class_names: ClassVar[tuple[str, ...]] = ("io.debezium.transforms.outbox.EventRouter",)

    def __init__(self, config: Config):
        problems: list[str] = []
        text = {k: str(config.get(k) if config.get(k) not in (None, "") else d) for k, d in DEFAULTS.items()}
        self.field_id = text["table.field.event.id"]
        self.field_key = text["table.field.event.key"]
        self.field_payload = text["table.field.event.payload"]
        self.route_by = text["route.by.field"]
        self.field_version = _optional(config, "table.field.event.schema.version")
        flags: dict[str, bool] = {}
        for name, default in _BOOLEANS.items():
            raw = config.get(name)
            try:
                flags[name] = default if raw in (None, "") else _parse_bool(str(raw))
            except InvalidValue as e:
                problems.append(f"{name}: {e}")
        self.tombstone_on_empty = flags.get("route.tombstone.on.empty.payload", False)
        self.error_on_missing = flags.get("table.fields.additional.error.on.missing", True)
        choices: dict[str, str] = {}
        for name, allowed in _ENUMS.items():
            raw = config.get(name)
            if name == "table.op.invalid.behavior" and raw in (None, ""):
                raw = config.get("debezium.op.invalid.behavior")  # its name in Debezium 1.x's documentation
            value = allowed[0] if raw in (None, "") else str(raw).strip().lower()
            if value not in allowed:
                problems.append(f"{name}: {raw!r} is not one of: {', '.join(allowed)}")
            choices[name] = value
        self.invalid_op = choices["table.op.invalid.behavior"]
        self.additional = _additional_fields(config.get("table.fields.additional.placement"), problems)
        try:
            self.topic_regex = java_pattern(text["route.topic.regex"])
            self.topic_replacement = java_replacement(text["route.topic.replacement"], self.topic_regex)
        except re.error as e:
            problems.append(f"route.topic.regex: {text['route.topic.regex']!r} is not a valid regular expression: {e}")
        except ValueError as e:
            problems.append(f"route.topic.replacement: {text['route.topic.replacement']!r}: {e}")
        if problems:
            raise ConfigError(problems)
        self.expander = (JsonExpander(choices["table.json.payload.null.behavior"] == "optional_bytes")
                         if flags["table.expand.json.payload"] else None)
        self.only_headers = not any(f.placement == "envelope" for f in self.additional)
        if _optional(config, "table.field.event.timestamp"):
            log.warning("outbox EventRouter: table.field.event.timestamp is ignored: cdc's records carry no Kafka "
                        "record timestamp")
        if any(f.placement == "partition" for f in self.additional):
            log.warning("outbox EventRouter: the 'partition' placement of table.fields.additional.placement is "
                        "ignored: cdc's records carry no Kafka partition")
        for name in config:
            if name not in DEFAULTS and name not in _BOOLEANS and name not in _ENUMS and name not in _OTHER \
                    and not name.startswith("tracing."):
                log.warning("outbox EventRouter: the option %r is not one of EventRouter's; it is ignored", name)
        #: Per after-schema (by identity): the column schemas the router needs.
        self._tables: dict[int, tuple[Schema, _Columns]] = {}
        #: Topics by routed value.
        self._topics: dict[str, str] = {}
        #: Value schemas by payload schema (by identity) or by version, as Debezium caches them.
        self._value_schemas: dict[Any, tuple[Schema, Schema]] = {}

    def apply(self, record: ChangeRecord) -> ChangeRecord | None:
        """The routed event, the record unchanged (not a change event), or None (tombstone, delete, update)."""
        value = record.value
        if value is None:
            log.debug("outbox EventRouter: tombstone ignored (topic %s)", record.topic)
            return None
        vs = record.value_schema
        if vs is None or vs.name is None or not vs.name.endswith(".Envelope"):
            return record
        op = value.get("op")
        if op == "d":
            log.debug("outbox EventRouter: delete ignored (topic %s)", record.topic)
            return None
        if op == "u":
            message = (f"outbox EventRouter: unexpected update of the outbox table (topic {record.topic}, "
                       f"key {record.key})")
            if self.invalid_op == "fatal":
                raise ConnectorError(message + ": the outbox table must only receive inserts "
                                     "(table.op.invalid.behavior=fatal)")
            (log.error if self.invalid_op == "error" else log.warning)("%s ignored", message)
            return None
        row = value.get("after")
        if not isinstance(row, dict):
            raise ConnectorError(f"outbox EventRouter: a {op!r} event of topic {record.topic} has no row after the "
                                 "change; the outbox table must only receive inserts")
        columns = self._columns(vs, record.topic)
        routed = row.get(self.route_by)
        if not isinstance(routed, str):
            raise ConnectorError(f"outbox EventRouter: route.by.field column {self.route_by!r} is "
                                 f"{'null' if routed is None else 'not a string'} in a row of topic {record.topic}; "
                                 "it names the topic")
        payload, payload_schema = row[self.field_payload], columns.payload
        if self.expander is not None:
            if isinstance(payload, str) and payload_schema.type == "string":
                try:
                    payload_schema, payload = self.expander.expand(self.field_payload, payload)
                except JsonExpansionError as e:
                    log.warning("outbox EventRouter: JSON expansion failed (key %s): %s", record.key, e)
            else:
                log.warning("outbox EventRouter: table.expand.json.payload is on but the payload is not a string "
                            "(key %s)", record.key)
        headers = dict(record.headers)
        headers["id"] = row[self.field_id]
        envelope: dict[str, Any] | None = None if self.only_headers else {"payload": payload}
        for f in self.additional:
            if f.column not in row:
                if not self.error_on_missing:
                    continue
                raise ConnectorError(f"outbox EventRouter: table.fields.additional.placement names the column "
                                     f"{f.column!r}, which the rows of topic {record.topic} do not have")
            if f.placement == "envelope":
                envelope[f.alias] = row[f.column]  # type: ignore[index]
            elif f.placement == "header":
                headers[f.alias] = row[f.column]
        if self.tombstone_on_empty and _empty(payload, payload_schema):
            new_value, new_schema = None, None
        elif self.only_headers:
            new_value, new_schema = payload, payload_schema
        else:
            new_value, new_schema = envelope, self._value_schema(payload_schema, columns, row, routed)
        topic = self._topics.get(routed)
        if topic is None:
            topic = self._topic(routed)
        return ChangeRecord(topic, row[self.field_key], new_value, columns.key, new_schema, record.offset, headers,
                            record.partition, {**record.header_schemas, **columns.headers} if record.header_schemas
                            else columns.headers)

    def _topic(self, routed: str) -> str:
        """The topic of a routed value (Kafka's RegexRouter: the value itself when the regex does not match)."""
        m = self.topic_regex.fullmatch(routed)
        topic = self.topic_replacement(m) if m is not None else routed
        if len(self._topics) >= MAX_SCHEMAS:
            self._topics.clear()
        self._topics[routed] = topic
        return topic

    def _columns(self, envelope: Schema, topic: str) -> _Columns:
        """The column schemas of an outbox table's rows (found once per table schema)."""
        cached = self._tables.get(id(envelope))
        if cached is not None and cached[0] is envelope:
            return cached[1]
        try:
            after = envelope.field("after").schema
        except KeyError:
            raise ConnectorError(f"outbox EventRouter: the change events of topic {topic} have no 'after'") from None
        names = {f.name: f.schema for f in after.fields}
        for prop, column in (("table.field.event.payload", self.field_payload), ("table.field.event.id", self.field_id),
                             ("table.field.event.key", self.field_key), ("route.by.field", self.route_by),
                             ("table.field.event.schema.version", self.field_version)):
            if column is not None and column not in names:
                raise ConnectorError(f"outbox EventRouter: {prop} names the column {column!r}, which the table of "
                                     f"topic {topic} does not have (it has {', '.join(names)})")
        extra = {}
        for f in self.additional:
            if f.column in names:
                extra[f.column] = names[f.column]
            elif self.error_on_missing:
                raise ConnectorError(f"outbox EventRouter: table.fields.additional.placement names the column "
                                     f"{f.column!r}, which the table of topic {topic} does not have")
        columns = _Columns(after, names[self.field_payload], names.get(self.field_key, STRING), extra,
                           {"id": names[self.field_id],
                            **{f.alias: names[f.column] for f in self.additional
                               if f.placement == "header" and f.column in names}})
        if len(self._tables) >= MAX_SCHEMAS:
            self._tables.clear()
        self._tables[id(envelope)] = (envelope, columns)
        return columns

    def _value_schema(self, payload_schema: Schema, columns: _Columns, row: dict[str, Any], routed: str) -> Schema:
        """The envelope struct's schema; cached by payload schema, or by version, as Debezium caches it.

        Debezium builds the name from the routed value of the first event with that payload schema
        (or version) and keeps it for later events with another routed value; so does cdc.
        """
        version = None
        if self.field_version is not None:
            version = row[self.field_version]
            key: Any = ("version", version)
        else:
            key = id(payload_schema)
        cached = self._value_schemas.get(key)
        if cached is not None:
            if cached[0] is payload_schema or cached[0].json_bytes() == payload_schema.json_bytes():
                return cached[1]
            if version is not None:
                # Debezium keeps one value schema per version and fails (DataException) putting another payload in it.
                raise ConnectorError(f"outbox EventRouter: a payload of schema version {version} (column "
                                     f"{self.field_version!r}) has another schema than an earlier payload of that "
                                     "version; give each payload schema its own version")
        name = columns.after.name
        if name is None:
            name = routed
        elif "." in name:
            name = f"{name[: name.rfind('.') + 1]}{routed}.{name[name.rfind('.') + 1:]}"
        else:
            name = f"{routed}.{name}"
        fields = [Field("payload", payload_schema)]
        fields += [Field(f.alias, columns.extra[f.column]) for f in self.additional
                   if f.placement == "envelope" and f.column in columns.extra]
        schema = Schema("struct", name=name, version=version, fields=tuple(fields))
        if len(self._value_schemas) >= MAX_SCHEMAS:
            self._value_schemas.clear()
        self._value_schemas[key] = (payload_schema, schema)
        return schema


@dataclass(frozen=True)
class _Columns:
    """The schemas of one outbox table: its row, payload and key columns, and the additional columns."""

    after: Schema
    payload: Schema
    key: Schema
    extra: dict[str, Schema]
    #: The schemas of the headers the router adds (``id`` and ``header`` placements): their columns'.
    headers: dict[str, Schema] = dataclass_field(default_factory=dict)


def _optional(config: Config, name: str) -> str | None:
    """A property's text, None when unset or empty."""
    raw = config.get(name)
    return None if raw in (None, "") else str(raw).strip()


def _additional_fields(raw: Any, problems: list[str]) -> list[AdditionalField]:
    """``column:placement[:alias],...``; a problem for each entry that is not a pair or trio of a known placement."""
    if raw in (None, ""):
        return []
    out = []
    for entry in str(raw).split(","):
        if not entry.strip():
            continue
        parts = [p.strip() for p in entry.split(":")]
        if len(parts) not in (2, 3) or not parts[0]:
            problems.append(f"table.fields.additional.placement: {entry.strip()!r} is not 'column:placement' or "
                            "'column:placement:alias'")
            continue
        placement = parts[1].lower()
        if placement not in ("header", "envelope", "partition"):
            problems.append(f"table.fields.additional.placement: {entry.strip()!r}: the placement must be header, "
                            "envelope or partition")
            continue
        out.append(AdditionalField(parts[0], placement, parts[2] if len(parts) == 3 else parts[0]))
    return out


def _empty(payload: Any, schema: Schema) -> bool:
    """Debezium's test for an empty payload: null, or a text that is blank (bytes and structs never are)."""
    if payload is None:
        return True
    return schema.type == "string" and isinstance(payload, str) and not payload.strip(_JAVA_BLANK)
