"""Debezium's CloudEventsConverter: change events as CloudEvents 1.0 in structured JSON mode.

Each data change event's value becomes one JSON object, with the attributes in the order
Debezium writes them::

    id, source, specversion, type, time, datacontenttype, [dataschema],
    iodebeziumop, iodebezium<source field>..., iodebeziumtxid, iodebeziumtxtotalorder,
    iodebeziumtxdatacollectionorder, data

* ``id`` is made per connector as Debezium's CloudEventsMaker makes it (PostgreSQL
  ``name:<name>;lsn:<lsn>;txId:<txId>;sequence:<sequence>``; MySQL and MariaDB
  ``name:<name>;file:<file>;pos:<pos>``; SQL Server ``name:..;change_lsn:..;commit_lsn:..;event_serial_no:..``; Db2 ``name:..;change_lsn:..;commit_lsn:..``;
  MongoDB ``name:..;ts:<ts_ms>;ord:<ord>``), a null written as ``null`` as Java's string
  concatenation does. (Debezium 3.0's PostgreSQL maker calls ``toString()`` on each part, so a
  null part there fails instead; every PostgreSQL change event has all three set.)
* ``source`` is ``/debezium/<connector>/<name>``; ``type`` ``io.debezium.connector.<connector>.DataChangeEvent``
  (the seeds' 1.2-era example shows the older ``io.debezium.postgresql.datachangeevent``; 2.7 and
  3.0 write this one); ``time`` is ``source.ts_ms`` as ``yyyy-MM-dd'T'HH:mm:ss.SSSZ`` in UTC.
* extension attributes (``extension.attributes.enable``, true by default): ``iodebeziumop`` and one
  per field of the ``source`` block, named ``iodebezium`` + the field name with every character
  other than ASCII letters and digits removed (``ts_ms`` -> ``iodebeziumtsms``); int64 values are
  written as strings (CloudEvents has no 64-bit integer), int8/16/32 and booleans as they are;
  then the transaction block's ``id``, ``total_order``, ``data_collection_order`` as
  ``iodebeziumtx*``, null when the event has no transaction.
* ``data`` holds the envelope's ``before`` and ``after`` (MariaDB's maker names no fields, so
  there it holds every envelope field, as in Debezium 2.7 and 3.0) under the schema
  ``io.debezium.connector.<connector>.Data``: with ``json.schemas.enable`` (true by default) as
  ``{"schema":...,"payload":...}``, else the bare payload. With ``data.serializer.type=avro``
  it is the base64 text of the Avro data in the Confluent wire format (subject ``<topic>-value``)
  and ``dataschema`` is ``<avro.schema.registry.url>/schemas/ids/<id>``.

Debezium 2.7 and 3.0: the converter and makers are the same but for the PostgreSQL id above; the
conformance suite (``tests/test_conformance_formats.py``) finds no other difference between cdc
and 3.0.7's converter on the same changes. ``schema.name.adjustment.mode`` and
``schema.cloudevents.name`` only name the envelope's Connect schema, which the JSON envelope
(written without schema) does not show: accepted, without visible effect.

As Debezium's converter, values whose schema is not a change event envelope (heartbeats,
transaction metadata, schema change events) and tombstones are written as null, and a connector
type without a CloudEvents maker is an error. Not implemented (refused when set):
``serializer.type=avro`` (an Avro envelope) and a ``metadata.source`` other than the value.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import orjson

from cdc_core.config.fields import InvalidValue, _parse_bool
from cdc_core.errors import CdcError, ConfigError
from cdc_core.events import ChangeRecord
from cdc_core.schema import Schema, struct
from cdc_core.serializers.defaults import payload_filler
from cdc_core.serializers.formats import FormatSerializer

SPECVERSION = "1.0"
EXTENSION_PREFIX = "iodebezium"
#: The converter's own options (``value.converter.<option>`` / ``debezium.format.value.<option>``).
OPTIONS = frozenset({"serializer.type", "data.serializer.type", "extension.attributes.enable",
                     "schema.name.adjustment.mode", "schema.cloudevents.name", "schema.data.name.source.header.enable",
                     "metadata.source"})
DEFAULT_METADATA_SOURCE = "value,id:generate,type:generate,dataSchemaName:generate"
_TX_FIELDS = (("id", False), ("total_order", True), ("data_collection_order", True))


class CloudEventsError(CdcError):
    """An event cannot be written as a CloudEvent (a connector type without a maker, a source field type)."""


def _parts(*names: str) -> Callable[[dict[str, Any]], str]:
    """The id maker: ``name:<name>`` then ``;<label>:<source field>`` per name (``label=field`` renames)."""
    labels = [(n.split("=")[0], n.split("=")[-1]) for n in names]

    def make(source: dict[str, Any]) -> str:
        return "name:" + _java(source.get("name")) + "".join(f";{label}:{_java(source.get(field))}"
                                                             for label, field in labels)

    return make


def _java(value: Any) -> str:
    """``String.valueOf`` of a JSON value as Debezium's maker concatenates it."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


#: Per connector type: the id maker and the envelope fields ``data`` holds (None: all of them).
MAKERS: dict[str, tuple[Callable[[dict[str, Any]], str], tuple[str, ...] | None]] = {
    "postgresql": (_parts("lsn", "txId", "sequence"), ("before", "after")),
    "mysql": (_parts("file", "pos"), ("before", "after")),
    "mariadb": (_parts("file", "pos"), None),
    "sqlserver": (_parts("change_lsn", "commit_lsn", "event_serial_no"), ("before", "after")),
    # Db2CloudEventsMaker (2.7.4): name, change_lsn, commit_lsn (Db2ConnectorIT.shouldOutputRecordsInCloudEventsFormat).
    "db2": (_parts("change_lsn", "commit_lsn"), ("before", "after")),
    "mongodb": (_parts("ts=ts_ms", "ord"), ("before", "after", "updateDescription")),
}


def extension_name(field: str) -> str:
    """``iodebezium`` + the field name without characters other than ASCII letters and digits."""
    return EXTENSION_PREFIX + "".join(c for c in field if c.isascii() and c.isalnum())


def ce_time(ts_ms: int) -> str:
    """Milliseconds since the epoch as ``yyyy-MM-dd'T'HH:mm:ss.SSS'Z'`` (UTC), as Debezium's maker formats it."""
    import datetime as dt

    seconds, millis = divmod(int(ts_ms), 1000)
    moment = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=seconds)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{millis:03d}Z"


class _Plan:
    """What is fixed per envelope schema: extension attributes, data schema and its JSON prefix."""

    __slots__ = ("schema", "connector", "make_id", "source", "type", "extensions", "data_fields",
                 "data_schema", "data_prefix", "data_filler")

    def __init__(self, schema: Schema, connector: str, converter: CloudEventsConverter):
        self.schema = schema
        self.connector = connector
        maker = MAKERS.get(connector)
        if maker is None:
            raise CloudEventsError(f"no CloudEvents maker for connector type {connector!r} (Debezium has them for "
                                   f"{', '.join(sorted(MAKERS))})")
        self.make_id, fields = maker
        self.type = f"io.debezium.connector.{connector}.DataChangeEvent"
        self.extensions: list[tuple[str, str, bool]] = []
        source = schema.field("source").schema
        for f in source.fields:
            kind = f.schema.type
            if kind not in ("boolean", "int8", "int16", "int32", "int64", "string"):
                raise CloudEventsError(f"source field {f.name!r} of type {kind} cannot be a CloudEvents extension attribute")
            self.extensions.append((extension_name(f.name), f.name, kind == "int64"))
        names = schema.field_names if fields is None else tuple(n for n in fields if n in schema.field_names)
        self.data_fields = names
        self.data_schema = struct(f"io.debezium.connector.{connector}.Data",
                                  [(n, schema.field(n).schema) for n in names])
        self.data_prefix = b'{"schema":' + self.data_schema.json_bytes() + b',"payload":'
        self.data_filler = payload_filler(self.data_schema, converter.replace)


class CloudEventsConverter:
    """The value side of Debezium's CloudEventsConverter (JSON envelope; JSON or Avro data)."""

    name: ClassVar[str] = "cloudevents"

    def __init__(self, options: Mapping[str, Any] | None = None, prefix: str = "", *, is_key: bool = False):
        options = dict(options or {})
        problems: list[str] = []
        if is_key:
            problems.append(f"{prefix.rstrip('.')}: cloudevents is a format for values only; keys can be json or avro")

        def flag(name: str, default: bool) -> bool:
            raw = options.get(name)
            if raw is None or raw == "":
                return default
            try:
                return _parse_bool(str(raw))
            except InvalidValue as e:
                problems.append(f"{prefix}{name}: {e}")
                return default

        envelope = str(options.get("serializer.type") or "json").strip().lower()
        data = str(options.get("data.serializer.type") or "json").strip().lower()
        if envelope == "avro":
            problems.append(f"{prefix}serializer.type: 'avro' (an Avro CloudEvents envelope) is not supported; "
                            "the envelope is json")
        elif envelope != "json":
            problems.append(f"{prefix}serializer.type: {envelope!r} is not a serializer type; choose json or avro")
        if data not in ("json", "avro"):
            problems.append(f"{prefix}data.serializer.type: {data!r} is not a serializer type; choose json or avro")
        self.extensions = flag("extension.attributes.enable", True)
        flag("schema.data.name.source.header.enable", False)
        adjustment = str(options.get("schema.name.adjustment.mode") or "avro").strip().lower()
        if adjustment not in ("none", "avro", "avro_unicode"):
            problems.append(f"{prefix}schema.name.adjustment.mode: {adjustment!r} is not valid; choose none, avro or "
                            "avro_unicode")
        metadata = ",".join(p.strip() for p in str(options.get("metadata.source") or DEFAULT_METADATA_SOURCE).split(","))
        parts = [p for p in metadata.split(",") if p]
        if not parts or parts[0].lower() != "value" or any(p.split(":")[-1].lower() != "generate" for p in parts[1:]):
            problems.append(f"{prefix}metadata.source: {metadata!r} is not supported; only the value's metadata "
                            f"({DEFAULT_METADATA_SOURCE}) is (header sources need the metadata headers)")
        self.schemas = flag("json.schemas.enable", True)
        self.replace = flag("json.replace.null.with.default", True)
        self.avro: Any = None
        self.registry_url = ""
        if data == "avro" and envelope == "json":
            from cdc_core.serializers.avro import AvroConverter

            avro_options = {k[len("avro."):]: v for k, v in options.items() if k.startswith("avro.")}
            try:
                self.avro = AvroConverter(False, avro_options, prefix + "avro.")
            except ConfigError as e:
                problems += e.problems
            self.registry_url = ",".join(u.strip() for u in str(avro_options.get("schema.registry.url") or "").split(",")
                                         if u.strip())
        if problems:
            raise ConfigError(problems)
        self._plans: dict[int, tuple[Schema, _Plan | None]] = {}
        self._last_time: tuple[Any, str] = (None, "")

    def _plan(self, schema: Schema, value: dict[str, Any]) -> _Plan | None:
        """The plan of an envelope schema (None: not a change event), made once per schema object."""
        found = self._plans.get(id(schema))
        if found is not None and found[0] is schema:
            return found[1]
        if schema.name is None or not schema.name.endswith(".Envelope") or "source" not in schema.field_names:
            plan = None
        else:
            plan = _Plan(schema, str(value["source"].get("connector")), self)
        self._plans[id(schema)] = (schema, plan)  # the schema kept alive, so its id is not reused
        return plan

    def _time(self, ts_ms: int) -> str:
        """``ce_time``, remembered for the last timestamp (the events of one transaction share it)."""
        last = self._last_time
        if last[0] != ts_ms:
            last = self._last_time = (ts_ms, ce_time(ts_ms))
        return last[1]

    def event(self, topic: str, schema: Schema | None, value: dict[str, Any] | None) -> bytes | None:
        """One value as a CloudEvent (None for tombstones and for values that are not change events)."""
        if value is None or schema is None:
            return None
        plan = self._plan(schema, value)
        if plan is None:
            return None
        source = value["source"]
        ce: dict[str, Any] = {
            "id": plan.make_id(source),
            "source": f"/debezium/{plan.connector}/{source.get('name')}",
            "specversion": SPECVERSION,
            "type": plan.type,
            "time": self._time(source["ts_ms"]),
            "datacontenttype": "application/json" if self.avro is None else "application/avro",
        }
        payload = {n: value.get(n) for n in plan.data_fields}
        if plan.data_filler is not None:
            payload = plan.data_filler(payload)
        if self.avro is not None:
            raw = self.avro.encode(topic, plan.data_schema, {n: value.get(n) for n in plan.data_fields})
            ce["dataschema"] = f"{self.registry_url}/schemas/ids/{int.from_bytes(raw[1:5], 'big')}"
        if self.extensions:
            ce["iodebeziumop"] = value.get("op")
            for ext, name, as_text in plan.extensions:
                x = source.get(name)
                ce[ext] = str(x) if as_text and x is not None else x
            tx = value.get("transaction")
            for name, as_text in _TX_FIELDS:
                x = tx.get(name) if tx else None
                ce[extension_name("tx" + name)] = str(x) if as_text and x is not None else x
        head = orjson.dumps(ce)
        if self.avro is not None:
            data = orjson.dumps(base64.b64encode(raw).decode())
        elif self.schemas:
            data = plan.data_prefix + orjson.dumps(payload) + b"}"
        else:
            data = orjson.dumps(payload)
        return head[:-1] + b',"data":' + data + b"}"

    def __call__(self, records: list[ChangeRecord]) -> list[bytes | None]:
        """The values of a batch as CloudEvents."""
        event = self.event
        return [event(r.topic, r.value_schema, r.value) for r in records]

    def close(self) -> None:
        """Close the Avro data converter's registry client, if any."""
        if self.avro is not None:
            self.avro.close()


class CloudEventsSerializer(FormatSerializer):
    """JSON keys (JsonConverter) and CloudEvents values (``debezium.format.value=cloudevents``)."""

    name: ClassVar[str] = "cloudevents"

    def __init__(self, key_schemas_enable: bool = True, value_schemas_enable: bool = True, *,
                 key_replace_null_with_default: bool = True, value_replace_null_with_default: bool = True,
                 options: Mapping[str, Any] | None = None):
        """``options``: the CloudEventsConverter's properties (``json.schemas.enable``, ...)."""
        from cdc_core.serializers.json import _converter

        convert = _converter(key_schemas_enable, key_replace_null_with_default)
        super().__init__(lambda records: [convert(r.key_schema, r.key) for r in records],
                         CloudEventsConverter(options, "debezium.format.value."))
