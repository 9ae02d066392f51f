"""CloudEvents values (``debezium.format.value=cloudevents``): the documented example byte for byte, the options.

The seeds' example (003, "Example change event records in CloudEvents format") is read from the
seed file itself and compared byte for byte with what cdc writes for the same change, after the
corrections the Debezium 2.7 source makes to that 1.2-era example (each named below). The
comparison with the real Debezium 3.0.7 converter on real PostgreSQL changes is
``test_conformance_formats.py``.
"""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path

import orjson
import pytest

from brokers.schema_registry import TestSchemaRegistry
from cdc_core.app import Application
from cdc_core.config.server import server_config
from cdc_core.engine import Engine
from cdc_core.errors import ConfigError
from cdc_core.events import ChangeRecord
from cdc_core.plugins import registry
from cdc_core.schema import INT32, OPTIONAL_STRING, struct
from cdc_core.serializers.cloudevents import CloudEventsConverter, ce_time, extension_name
from cdc_core.serializers.formats import build_serializer, settings_from_connect, settings_from_server
from cdc_core.table_events import envelope_schema
from cdc_postgres.source import SOURCE_SCHEMA

SEED = Path("/work/shared/seeds/003_1266a537bde320d5.txt")
VALUE = struct("test_server.s1.a.Value", [("pk", INT32), ("name", OPTIONAL_STRING)], optional=True)
ENVELOPE = envelope_schema("test_server.s1.a.Envelope", VALUE, SOURCE_SCHEMA)
KEY = struct("test_server.s1.a.Key", [("pk", INT32)])


def _example_record(**source_overrides) -> ChangeRecord:
    """The change of the documented example: a snapshot read of s1.a row (1, Bob) in transaction 565."""
    source = {"version": "1.2.4.Final", "connector": "postgresql", "name": "test_server", "ts_ms": 1578923739738,
              "snapshot": "true", "db": "postgres", "sequence": None, "ts_us": 1578923739738000,
              "ts_ns": 1578923739738000000, "schema": "s1", "table": "a", "txId": 565, "lsn": 29274832, "xmin": None,
              **source_overrides}
    value = {"before": None, "after": {"pk": 1, "name": "Bob"}, "source": source,
             "transaction": {"id": "565", "total_order": 1, "data_collection_order": 1},
             "op": "r", "ts_ms": 1578923739740, "ts_us": 1578923739740000, "ts_ns": 1578923739740000000}
    return ChangeRecord("test_server.s1.a", {"pk": 1}, value, KEY, ENVELOPE)


def _seed_example() -> dict:
    """The first CloudEvents example of the seed, its callout markers removed."""
    text = SEED.read_text(encoding="utf-8")
    start = text.index("{", text.index("The following example shows what a CloudEvents change event record"))
    end = text.index("Descriptions of fields in CloudEvents event", start)
    end = text.rindex("}", start, end) + 1
    body = re.sub(r"\[image: \d+\]", "", text[start:end]).strip()
    return json.loads(body)


def test_the_documented_example_byte_for_byte() -> None:
    """The seed's JSON/JSON example, with the 2.7 corrections, is exactly what cdc writes (attribute order too)."""
    if not SEED.is_file():
        pytest.skip(f"the seed file {SEED} is not on this machine")
    expected = _seed_example()
    # Corrections from the Debezium 2.7 source (the example is from 1.2):
    # 1. PostgresCloudEventsMaker.ceId appends ";sequence:<source.sequence>" (null here).
    expected["id"] += ";sequence:null"
    # 2. CloudEventsMaker.ceType is "io.debezium.connector.<type>.DataChangeEvent".
    expected["type"] = "io.debezium.connector.postgresql.DataChangeEvent"
    # 3. 2.x source blocks carry sequence, ts_us and ts_ns after db: one extension attribute each.
    ordered = {}
    for name, value in expected.items():
        ordered[name] = value
        if name == "iodebeziumdb":
            ordered.update(iodebeziumsequence=None, iodebeziumtsus="1578923739738000",
                           iodebeziumtsns="1578923739738000000")
    # The example's data has no schema: it was written with the data converter's schemas disabled.
    converter = CloudEventsConverter({"json.schemas.enable": "false"})
    (written,) = converter([_example_record()])
    assert written == orjson.dumps(ordered)


def test_data_carries_its_schema_by_default() -> None:
    """With json.schemas.enable left true, data is {"schema","payload"} under io.debezium.connector.postgresql.Data."""
    (written,) = CloudEventsConverter()([_example_record()])
    event = json.loads(written)
    assert list(event)[:6] == ["id", "source", "specversion", "type", "time", "datacontenttype"]
    assert event["datacontenttype"] == "application/json" and event["specversion"] == "1.0"
    assert event["data"]["schema"]["name"] == "io.debezium.connector.postgresql.Data"
    assert [f["field"] for f in event["data"]["schema"]["fields"]] == ["before", "after"]
    assert event["data"]["payload"] == {"before": None, "after": {"pk": 1, "name": "Bob"}}
    assert list(event)[-1] == "data"


def test_time_is_utc_with_milliseconds() -> None:
    """``time`` is RFC 3339 in UTC with three fraction digits, also for whole seconds and before 1970."""
    assert ce_time(1578923739738) == "2020-01-13T13:55:39.738Z"
    assert ce_time(0) == "1970-01-01T00:00:00.000Z"
    assert ce_time(-1) == "1969-12-31T23:59:59.999Z"


def test_extension_names_keep_only_letters_and_digits() -> None:
    """``ts_ms`` becomes ``iodebeziumtsms``; case is kept (``txId`` -> ``iodebeziumtxId``)."""
    assert extension_name("ts_ms") == "iodebeziumtsms"
    assert extension_name("txId") == "iodebeziumtxId"
    assert extension_name("data_collection_order") == "iodebeziumdatacollectionorder"


def test_extension_attributes_can_be_left_out() -> None:
    """extension.attributes.enable=false: only the required attributes and data."""
    (written,) = CloudEventsConverter({"extension.attributes.enable": "false"})([_example_record()])
    assert list(json.loads(written)) == ["id", "source", "specversion", "type", "time", "datacontenttype", "data"]


def test_events_without_a_transaction_have_null_tx_attributes() -> None:
    """The tx attributes are always there (null without transaction metadata), as Debezium's schema has them."""
    record = _example_record()
    record.value["transaction"] = None
    event = json.loads(CloudEventsConverter()([record])[0])
    assert event["iodebeziumtxid"] is None and event["iodebeziumtxtotalorder"] is None


def test_values_that_are_not_change_events_and_tombstones_are_null() -> None:
    """Heartbeats, transaction metadata and tombstones: null values, as Debezium's converter writes them."""
    heartbeat_schema = struct("io.debezium.connector.common.Heartbeat", [("ts_ms", INT32)])
    heartbeat = ChangeRecord("__debezium-heartbeat.test_server", None, {"ts_ms": 1}, None, heartbeat_schema)
    tombstone = ChangeRecord("test_server.s1.a", {"pk": 1}, None, KEY, None)
    assert CloudEventsConverter()([heartbeat, tombstone]) == [None, None]


def test_mariadb_data_holds_the_whole_envelope() -> None:
    """MariaDbCloudEventsMaker names no data fields: data is every envelope field (Debezium 2.7 and 3.0)."""
    record = _example_record(connector="mariadb", file="mariadb-bin.000001", pos=4)
    event = json.loads(CloudEventsConverter()([record])[0])
    assert event["id"] == "name:test_server;file:mariadb-bin.000001;pos:4"
    assert list(event["data"]["payload"]) == list(ENVELOPE.field_names)
    assert event["type"] == "io.debezium.connector.mariadb.DataChangeEvent"


def test_an_unknown_connector_type_is_an_error() -> None:
    """No maker for a connector type: an error naming it, as Debezium's DataException does."""
    with pytest.raises(Exception, match="no CloudEvents maker for connector type 'db9'"):
        CloudEventsConverter()([_example_record(connector="db9")])


def test_debezium_server_properties_choose_cloudevents_values_and_json_keys() -> None:
    """debezium.format.value=cloudevents: JSON keys as before, CloudEvents values."""
    serializer = build_serializer(settings_from_server({"debezium.format.value": "cloudevents",
                                                        "debezium.format.key.schemas.enable": "false"}), registry())
    (out,) = serializer.serialize([_example_record()])
    assert out.key == b'{"pk":1}'
    assert json.loads(out.value)["source"] == "/debezium/postgresql/test_server"


def test_connector_properties_name_the_converter_class() -> None:
    """value.converter=io.debezium.converters.CloudEventsConverter with value.converter.* options (library use)."""
    settings = settings_from_connect({"value.converter": "io.debezium.converters.CloudEventsConverter",
                                      "value.converter.json.schemas.enable": "false"})
    (out,) = build_serializer(settings).serialize([_example_record()])
    assert json.loads(out.value)["data"] == {"before": None, "after": {"pk": 1, "name": "Bob"}}
    engine = Engine({"connector.class": "io.debezium.connector.postgresql.PostgresConnector", "topic.prefix": "t",
                     "database.hostname": "localhost", "database.user": "u", "database.dbname": "d",
                     "value.converter": "io.debezium.converters.CloudEventsConverter"},
                    sink=_NullSink(), offset_store=_memory())
    assert type(engine.serializer.value).__name__ == "CloudEventsConverter"


def test_json_envelope_with_avro_data() -> None:
    """data.serializer.type=avro: data is the base64 of the Confluent-framed Avro data, dataschema its registry URI."""
    reg = TestSchemaRegistry().start()
    try:
        converter = CloudEventsConverter({"data.serializer.type": "avro", "avro.schema.registry.url": reg.url})
        event = json.loads(converter([_example_record()])[0])
        assert event["datacontenttype"] == "application/avro"
        raw = base64.b64decode(event["data"])
        schema_id = int.from_bytes(raw[1:5], "big")
        assert raw[0] == 0 and event["dataschema"] == f"{reg.url}/schemas/ids/{schema_id}"
        assert list(event)[6] == "dataschema"
        assert reg.subjects == {"test_server.s1.a-value": [schema_id]}
        from fastavro import parse_schema, schemaless_reader

        schema = parse_schema(json.loads(reg.schemas[schema_id - 1]))
        assert schemaless_reader(io.BytesIO(raw[5:]), schema) == {"before": None, "after": {"pk": 1, "name": "Bob"}}
    finally:
        reg.stop()


@pytest.mark.parametrize(("props", "message"), [
    ({"debezium.format.value": "xml"}, "debezium.format.value: 'xml' is not a supported format; choose json, cloudevents, avro"),
    ({"debezium.format.key": "cloudevents"}, "debezium.format.key: 'cloudevents' is not a supported format; choose json, avro"),
    ({"debezium.format.header": "avro"}, "debezium.format.header: 'avro' is not a supported format; choose json"),
    ({"debezium.format.value": "cloudevents", "debezium.format.value.serializer.type": "avro"},
     "debezium.format.value.serializer.type: 'avro' (an Avro CloudEvents envelope) is not supported"),
    ({"debezium.format.value": "cloudevents", "debezium.format.value.data.serializer.type": "avro"},
     "debezium.format.value.avro.schema.registry.url: is required"),
    ({"debezium.format.value": "cloudevents", "debezium.format.value.metadata.source": "header"},
     "debezium.format.value.metadata.source: 'header' is not supported"),
    ({"debezium.format.value": "cloudevents", "debezium.format.value.json.schemas.enable": "maybe"},
     "debezium.format.value.json.schemas.enable: 'maybe' is not a boolean"),
])
def test_bad_format_settings_are_refused_at_start(props, message) -> None:
    """A bad format or option stops the service at start with the property's name and the choices."""
    app = Application(server_config({"debezium.sink.type": "stdout",
                                     "debezium.source.connector.class": "io.debezium.connector.postgresql.PostgresConnector",
                                     "debezium.source.topic.prefix": "t", "debezium.source.database.hostname": "h",
                                     "debezium.source.database.user": "u", "debezium.source.database.dbname": "d",
                                     **props}), registry())
    problems = app.problems()
    assert any(p.startswith(message) for p in problems), problems
    with pytest.raises(ConfigError):
        app.engine()


class _NullSink:
    name = "null"

    def write(self, batch) -> None:
        pass

    def close(self) -> None:
        pass


def _memory():
    from cdc_core.stores.memory_offsets import MemoryOffsetStore

    return MemoryOffsetStore()


def test_header_format_json_and_its_schemas() -> None:
    """debezium.format.header=json: headers as {"schema","payload"} (Debezium Server's default), each with the
    schema it was made with; schemas.enable=false: their JSON values; Kafka Connect spellings: plain unless asked."""
    record = _example_record()
    record.headers = {"__debezium.newkey": {"pk": 2}, "origin": "x", "gone": None}
    record.header_schemas = {"__debezium.newkey": KEY}
    for framed in (build_serializer(settings_from_server({"debezium.format.header": "json"}), registry()),
                   build_serializer(settings_from_server({}), registry()),
                   build_serializer(settings_from_connect({"header.converter.schemas.enable": "true"}))):
        headers = framed.serialize([record])[0].headers
        assert headers["__debezium.newkey"] == {"schema": KEY.to_json(), "payload": {"pk": 2}}
        assert headers["origin"] == {"schema": None, "payload": "x"}
        assert headers["gone"] is None  # JsonConverter: no schema and no value is a null header
    plain = build_serializer(settings_from_server({"debezium.format.header.schemas.enable": "false"}), registry())
    assert plain.serialize([record])[0].headers == record.headers
    assert build_serializer(settings_from_server({"debezium.format.schemas.enable": "false"}),
                            registry()).serialize([record])[0].headers == record.headers
    assert build_serializer(settings_from_connect({})).serialize([record])[0].headers == record.headers
    no_headers = _example_record()
    assert build_serializer(settings_from_server({}), registry()).serialize([no_headers])[0].headers == {}


def test_unknown_format_options_are_named() -> None:
    """A misspelt converter option under debezium.format.* is an unknown property (the others are accepted)."""
    settings = settings_from_server({"debezium.format.value": "cloudevents", "debezium.format.value.serializer.typ": "json",
                                     "debezium.format.schema.registry.url": "http://r",
                                     "debezium.format.value.json.schemas.enable": "false"})
    from cdc_core.serializers.formats import format_problems

    assert format_problems(settings) == ["debezium.format.value.serializer.typ: unknown property"]
