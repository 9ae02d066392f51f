"""Avro keys and values (``debezium.format.key/value=avro``, ``*.converter=io.confluent.connect.avro.AvroConverter``).

The Connect-to-Avro schema mapping is checked rule by rule against Confluent's AvroData (as its
source states them), the Confluent wire format and subjects against a schema registry (the test
one; a real one as well when ``CDC_TEST_SCHEMA_REGISTRY_URL`` is set), and the records are read
back with fastavro. Real PostgreSQL changes through a running service:
``test_avro_service_end_to_end``; every catalogue type: ``test_formats_avro_types.py``.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid

import pytest

from avro_reader import as_json, decode
from brokers.schema_registry import TestSchemaRegistry, external_registry_url
from cdc_core.app import Application
from cdc_core.config.server import server_config
from cdc_core.errors import ConfigError
from cdc_core.events import ChangeRecord
from cdc_core.plugins import registry as plugin_registry
from cdc_core.schema import INT32, OPTIONAL_STRING, STRING, Schema, primitive, struct
from cdc_core.serializers.avro import AvroConverter
from cdc_core.serializers.avro_schema import AvroSchemaError, avro_schema
from cdc_core.serializers.formats import build_serializer, settings_from_connect, settings_from_server
from cdc_core.serializers.schema_registry import SchemaRegistryError

DECIMAL = primitive("bytes", True, name="org.apache.kafka.connect.data.Decimal", version=1,
                    parameters={"scale": "2", "connect.decimal.precision": "10"})
ENUM = Schema("string", optional=True, name="io.debezium.data.Enum", version=1, parameters={"allowed": "a,b"},
              default="a")
VALUE = struct("srv.public.t.Value", [
    ("id", INT32), ("name", OPTIONAL_STRING), ("amount", DECIMAL), ("raw", Schema("bytes", optional=True)),
    ("small", Schema("int16", optional=True)), ("tiny", Schema("int8")),
    ("day", Schema("int32", optional=True, name="org.apache.kafka.connect.data.Date", version=1)),
    ("at", Schema("int64", optional=True, name="org.apache.kafka.connect.data.Timestamp", version=1)),
    ("ms", Schema("int32", optional=True, name="org.apache.kafka.connect.data.Time", version=1)),
    ("kind", ENUM), ("tags", Schema("array", optional=True, items=STRING)),
    ("attrs", Schema("map", optional=True, keys=STRING, values=OPTIONAL_STRING)),
    ("by_id", Schema("map", optional=True, keys=INT32, values=STRING)),
], optional=True)
ENVELOPE = struct("srv.public.t.Envelope", [("before", VALUE), ("after", VALUE), ("op", STRING)], version=2)
KEY = struct("srv.public.t.Key", [("id", INT32)])
ROW = {"id": 7, "name": "Zoë", "amount": base64.b64encode((-12345).to_bytes(2, "big", signed=True)).decode(),
       "raw": "AAH/", "small": -300, "tiny": 5, "day": 18274, "at": 1578923739738, "ms": 3600000, "kind": None,
       "tags": ["x", "y"], "attrs": {"k": None}, "by_id": [[1, "one"], [2, "two"]]}


def _record(topic: str = "srv.public.t", row: dict | None = None) -> ChangeRecord:
    row = dict(ROW if row is None else row)
    return ChangeRecord(topic, {"id": row["id"]}, {"before": None, "after": row, "op": "c"}, KEY, ENVELOPE)


@pytest.fixture(params=["test-registry"] + (["real-registry"] if external_registry_url() else []))
def registry_url(request):
    """A fresh test registry (or the real one of ``CDC_TEST_SCHEMA_REGISTRY_URL``)."""
    if request.param == "real-registry":
        yield external_registry_url()
        return
    reg = TestSchemaRegistry().start()
    yield reg.url
    reg.stop()


@pytest.fixture
def test_registry():
    """The test registry itself (to look at its subjects and requests)."""
    reg = TestSchemaRegistry().start()
    yield reg
    reg.stop()


# -- the schema mapping (Confluent's AvroData rules) ----------------------------------------------------------


def test_the_mapping_follows_avrodata() -> None:
    """Logical types, connect.* metadata, unions and defaults, maps, nested names, as AvroData writes them."""
    avro = avro_schema(ENVELOPE)
    assert avro["type"] == "record" and avro["name"] == "Envelope" and avro["namespace"] == "srv.public.t"
    assert avro["connect.name"] == "srv.public.t.Envelope" and avro["connect.version"] == 2
    before, after, op = avro["fields"]
    assert before["type"][0] == "null" and before["default"] is None
    assert after["type"] == ["null", "srv.public.t.Value"]  # defined once, then referred to by name
    assert op == {"name": "op", "type": "string"}
    fields = {f["name"]: f for f in before["type"][1]["fields"]}
    assert fields["id"] == {"name": "id", "type": "int"}
    assert fields["amount"]["type"][1] == {
        "type": "bytes", "scale": 2, "precision": 10, "connect.version": 1,
        "connect.parameters": {"scale": "2", "connect.decimal.precision": "10"},
        "connect.name": "org.apache.kafka.connect.data.Decimal", "logicalType": "decimal"}
    assert fields["small"]["type"][1] == {"type": "int", "connect.type": "int16"}
    assert fields["tiny"]["type"] == {"type": "int", "connect.type": "int8"}
    assert fields["day"]["type"][1]["logicalType"] == "date"
    assert fields["at"]["type"][1]["logicalType"] == "timestamp-millis"
    assert fields["ms"]["type"][1]["logicalType"] == "time-millis"
    # An optional field with a default: the default's branch first, the field's default the default.
    assert fields["kind"]["type"][1] == "null" and fields["kind"]["default"] == "a"
    assert fields["kind"]["type"][0]["connect.default"] == "a"
    assert fields["attrs"]["type"][1] == {"type": "map", "values": ["null", "string"]}
    entry = fields["by_id"]["type"][1]["items"]
    assert entry["name"] == "MapEntry" and entry["namespace"] == "io.confluent.connect.avro"
    assert [f["name"] for f in entry["fields"]] == ["key", "value"]


def test_a_decimal_without_precision_gets_avrodata_default_64() -> None:
    """``connect.decimal.precision`` absent: precision 64, as AvroData's default."""
    schema = primitive("bytes", name="org.apache.kafka.connect.data.Decimal", version=1, parameters={"scale": "3"})
    assert avro_schema(schema)["precision"] == 64 and avro_schema(schema)["logicalType"] == "decimal"


def test_unnamed_structs_are_connect_default() -> None:
    """A struct without a name is io.confluent.connect.avro.ConnectDefault (then ConnectDefault2, ...)."""
    inner = struct(None, [("x", INT32)])
    avro = avro_schema(struct(None, [("a", inner)]))
    assert (avro["namespace"], avro["name"]) == ("io.confluent.connect.avro", "ConnectDefault")
    assert avro["fields"][0]["type"]["name"] == "ConnectDefault2"


def test_invalid_names_are_refused_naming_the_adjustment_property() -> None:
    """A table or column name Avro cannot hold: refused with schema/field.name.adjustment.mode=avro as the fix."""
    bad_schema = struct("srv.public.my-table.Value", [("id", INT32)])
    with pytest.raises(AvroSchemaError, match="schema.name.adjustment.mode=avro"):
        avro_schema(bad_schema)
    bad_field = struct("srv.public.t.Value", [("my col", INT32)])
    with pytest.raises(AvroSchemaError, match="field.name.adjustment.mode=avro"):
        avro_schema(bad_field)
    scrubbed = avro_schema(bad_field, scrub=True)
    assert scrubbed["fields"][0]["name"] == "my_col"


def test_scrubbed_field_names_are_written_under_their_new_names(test_registry) -> None:
    """scrub.invalid.names=true: the schema and the data both use the adjusted names."""
    schema = struct("srv.public.t.Value", [("my col", INT32)])
    record = ChangeRecord("srv.public.t", None, {"my col": 3}, None, schema)
    converter = AvroConverter(False, {"schema.registry.url": test_registry.url, "scrub.invalid.names": "true"})
    (data,) = converter([record])
    assert decode(test_registry.url, data)[2] == {"my_col": 3}


# -- the wire format and the registry --------------------------------------------------------------------------


def test_wire_format_subjects_and_values(registry_url) -> None:
    """Magic byte 0, the 4-byte id, Avro binary; subjects <topic>-key/-value; fastavro reads the payload back."""
    topic = f"srv{uuid.uuid4().hex[:6]}.public.t"
    serializer = build_serializer(settings_from_server({
        "debezium.format.key": "avro", "debezium.format.value": "avro",
        "debezium.format.schema.registry.url": registry_url}))
    (out,) = serializer.serialize([_record(topic)])
    key_id, _, key = decode(registry_url, out.key)
    value_id, logical, raw = decode(registry_url, out.value)
    assert out.key[0] == 0 and out.value[0] == 0 and key_id != value_id
    assert key == {"id": 7}
    expected = dict(ROW, kind="a")  # AvroData writes Struct.get: a null with a default is the default
    assert as_json(raw, ENVELOPE) == {"before": None, "after": expected, "op": "c"}
    assert logical["after"]["day"].isoformat() == "2020-01-13"
    assert str(logical["after"]["amount"]) == "-123.45"
    import httpx

    subjects = httpx.get(f"{registry_url}/subjects", timeout=30).json()
    assert f"{topic}-key" in subjects and f"{topic}-value" in subjects
    latest = httpx.get(f"{registry_url}/subjects/{topic}-value/versions/latest", timeout=30).json()
    assert latest["id"] == value_id


def test_one_registry_request_per_schema(test_registry) -> None:
    """Ids are cached per (topic, schema): many batches of one table cost one registration per subject."""
    serializer = build_serializer(settings_from_server({
        "debezium.format.key": "avro", "debezium.format.value": "avro",
        "debezium.format.schema.registry.url": test_registry.url}))
    for _ in range(5):
        serializer.serialize([_record(row=dict(ROW, id=i)) for i in range(100)])
    posts = [p for m, p in test_registry.requests if m == "POST"]
    assert sorted(posts) == ["/subjects/srv.public.t-key/versions", "/subjects/srv.public.t-value/versions"]


def test_record_name_strategies(test_registry) -> None:
    """RecordNameStrategy / TopicRecordNameStrategy name subjects after the record."""
    value = AvroConverter(False, {"schema.registry.url": test_registry.url,
                                  "value.subject.name.strategy": "io.confluent.kafka.serializers.subject.RecordNameStrategy"})
    key = AvroConverter(True, {"schema.registry.url": test_registry.url,
                               "key.subject.name.strategy": "TopicRecordNameStrategy"})
    value([_record()]), key([_record()])
    assert set(test_registry.subjects) == {"srv.public.t.Envelope", "srv.public.t-srv.public.t.Key"}


def test_without_auto_registration_a_missing_schema_is_a_clear_error(test_registry) -> None:
    """auto.register.schemas=false: an unregistered schema stops with the subject's name; once registered it is found."""
    lookup = AvroConverter(False, {"schema.registry.url": test_registry.url, "auto.register.schemas": "false"})
    with pytest.raises(SchemaRegistryError, match="srv.public.t-value.*auto.register.schemas is false"):
        lookup([_record()])
    AvroConverter(False, {"schema.registry.url": test_registry.url})([_record()])
    (data,) = AvroConverter(False, {"schema.registry.url": test_registry.url, "auto.register.schemas": "false"})([_record()])
    assert decode(test_registry.url, data)[2]["after"]["id"] == 7


def test_basic_auth_and_no_password_in_errors() -> None:
    """basic.auth.user.info is sent; a refused password never shows in the error."""
    reg = TestSchemaRegistry(user="svc", password="s3cret-pw").start()
    try:
        ok = AvroConverter(False, {"schema.registry.url": reg.url, "basic.auth.credentials.source": "USER_INFO",
                                   "basic.auth.user.info": "svc:s3cret-pw"})
        assert ok([_record()])[0][0] == 0
        in_url = AvroConverter(False, {"schema.registry.url": reg.url.replace("http://", "http://svc:s3cret-pw@")})
        assert in_url([_record()])[0][0] == 0
        bad = AvroConverter(False, {"schema.registry.url": reg.url.replace("http://", "http://svc:wrong-pw@")})
        with pytest.raises(SchemaRegistryError) as e:
            bad([_record()])
        assert "401" in str(e.value) and "wrong-pw" not in str(e.value) and "svc" not in str(e.value)
    finally:
        reg.stop()


def test_an_unreachable_registry_names_the_subject() -> None:
    """No registry listening: the error names the subject and the URL, and says it cannot be reached."""
    converter = AvroConverter(False, {"schema.registry.url": "http://127.0.0.1:9"})
    with pytest.raises(SchemaRegistryError, match=r"cannot be reached for subject 'srv.public.t-value'.*127.0.0.1:9"):
        converter([_record()])


def test_tombstones_and_null_keys_are_null(test_registry) -> None:
    """A null value (tombstone) or key (keyless table) is written as null."""
    tombstone = ChangeRecord("srv.public.t", {"id": 1}, None, KEY, None)
    converter = AvroConverter(False, {"schema.registry.url": test_registry.url})
    assert converter([tombstone]) == [None]


def test_connector_properties_name_confluent_and_apicurio_converters(test_registry) -> None:
    """key.converter / value.converter class names with their *.converter.schema.registry.url (library use)."""
    settings = settings_from_connect({
        "key.converter": "io.confluent.connect.avro.AvroConverter",
        "key.converter.schema.registry.url": test_registry.url,
        "value.converter": "io.confluent.connect.avro.AvroConverter",
        "value.converter.schema.registry.url": test_registry.url})
    (out,) = build_serializer(settings).serialize([_record()])
    assert decode(test_registry.url, out.key)[2] == {"id": 7}
    apicurio = settings_from_connect({"value.converter": "io.apicurio.registry.utils.converter.AvroConverter",
                                      "value.converter.apicurio.registry.url": "http://apicurio:8080/apis/registry/v2"})
    with pytest.raises(ConfigError, match="value.converter.apicurio.registry.url: Apicurio's own converter protocol"):
        build_serializer(apicurio)
    json_key = settings_from_connect({"value.converter": "io.confluent.connect.avro.AvroConverter",
                                      "value.converter.schema.registry.url": test_registry.url,
                                      "key.converter.schemas.enable": "false"})
    (out,) = build_serializer(json_key).serialize([_record()])
    assert out.key == b'{"id":7}' and out.value[0] == 0


@pytest.mark.parametrize(("props", "message"), [
    ({"debezium.format.value": "avro"}, "debezium.format.value.schema.registry.url: is required"),
    ({"debezium.format.value": "avro", "debezium.format.value.schema.registry.url": "http://r",
      "debezium.format.value.value.subject.name.strategy": "Mine"},
     "debezium.format.value.value.subject.name.strategy: 'Mine' is not a supported subject name strategy"),
    ({"debezium.format.key": "avro", "debezium.format.key.schema.registry.url": "http://r",
      "debezium.format.key.use.latest.version": "true"}, "debezium.format.key.use.latest.version: 'true' is not supported"),
    ({"debezium.format.key": "protobuf"}, "debezium.format.key: 'protobuf' is not a supported format; choose json, avro"),
    ({"debezium.format.value": "avro", "debezium.format.schema.registry.url": "http://r"},
     "debezium.format.value: avro writes binary records, which the stdout sink (JSON lines) cannot hold"),
])
def test_bad_avro_settings_are_refused_at_start(props, message) -> None:
    """Refused at start, naming the property (Debezium Server spelling) and what to do."""
    app = Application(server_config({"debezium.sink.type": "stdout",
                                     "debezium.source.connector.class": "io.debezium.connector.postgresql.PostgresConnector",
                                     "debezium.source.topic.prefix": "t", "debezium.source.database.hostname": "h",
                                     "debezium.source.database.user": "u", "debezium.source.database.dbname": "d",
                                     **props}), plugin_registry())
    problems = app.problems()
    assert any(p.startswith(message) for p in problems), problems
    with pytest.raises(ConfigError):
        app.engine()


# -- a running service on real PostgreSQL ----------------------------------------------------------------------


class _MemorySink:
    """A sink keeping the bytes it is given (a stand-in for a Kafka topic)."""

    name = "memory-test"
    records: list = []

    def __init__(self, config) -> None:
        pass

    def write(self, batch) -> None:
        _MemorySink.records.extend(batch)

    def close(self) -> None:
        pass


def test_avro_service_end_to_end(pg_server, pg_db, test_registry) -> None:
    """debezium.format.key/value=avro on a running service: snapshot and streamed rows, read back from the registry."""
    from cdc_core.hookspecs import hookimpl

    class Plugin:
        @hookimpl
        def register_sinks(self):
            return [_MemorySink]

    with pg_server.connect(pg_db) as conn:
        conn.execute("CREATE TABLE avro_t (id int PRIMARY KEY, amount numeric(8,3), at date, data bytea)")
        conn.execute("INSERT INTO avro_t VALUES (1, 1.5, '2020-01-13', '\\x00ff')")
    plugins = plugin_registry()
    plugins.register(Plugin(), "memory-test-sink")
    _MemorySink.records = []
    app = Application(server_config({
        "debezium.sink.type": "memory-test",
        "debezium.source.connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "debezium.source.topic.prefix": "av", "debezium.source.database.hostname": pg_server.host,
        "debezium.source.database.port": pg_server.port, "debezium.source.database.user": pg_server.user,
        "debezium.source.database.password": "unused", "debezium.source.database.dbname": pg_db,
        "debezium.source.plugin.name": "pgoutput", "debezium.source.table.include.list": "public.avro_t",
        "debezium.source.slot.name": f"av_{uuid.uuid4().hex[:8]}",
        "debezium.source.publication.name": f"av_{uuid.uuid4().hex[:8]}",
        "debezium.source.offset.storage": "org.apache.kafka.connect.storage.MemoryOffsetBackingStore",
        "debezium.format.key": "avro", "debezium.format.value": "avro",
        "debezium.format.schema.registry.url": test_registry.url,
        "debezium.source.schema.name.adjustment.mode": "avro",
    }), plugins)
    engine = app.engine()
    thread = threading.Thread(target=engine.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while len(_MemorySink.records) < 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        with pg_server.connect(pg_db) as conn:
            conn.execute("INSERT INTO avro_t VALUES (2, -0.001, '1969-12-31', NULL)")
        while len(_MemorySink.records) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        engine.stop()
        thread.join(30)
    values = [decode(test_registry.url, r.value)[1] for r in _MemorySink.records if r.topic == "av.public.avro_t"]
    assert [v["op"] for v in values] == ["r", "c"]
    assert [str(v["after"]["amount"]) for v in values] == ["1.500", "-0.001"]
    # io.debezium.time.Date (time.precision.mode=adaptive) is a plain int of days, not Avro's date logical type.
    assert [v["after"]["at"] for v in values] == [18274, -1]
    assert values[0]["after"]["data"] == b"\x00\xff" and values[1]["after"]["data"] is None
    assert {"av.public.avro_t-key", "av.public.avro_t-value"} <= set(test_registry.subjects)
    assert json.loads(test_registry.schemas[0])["type"] == "record"


def test_other_converter_classes_are_refused_and_header_converters_accepted() -> None:
    """A key/value converter cdc does not have would change the data: refused naming the classes it has."""
    from cdc_core.serializers.formats import format_problems

    problems = format_problems(settings_from_connect({
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "header.converter": "org.apache.kafka.connect.storage.SimpleHeaderConverter"}))
    assert len(problems) == 1 and problems[0].startswith(
        "value.converter: 'org.apache.kafka.connect.storage.StringConverter' is not a supported converter class; "
        "choose json, cloudevents, avro (org.apache.kafka.connect.json.JsonConverter, "
        "io.debezium.converters.CloudEventsConverter, io.confluent.connect.avro.AvroConverter"), problems
