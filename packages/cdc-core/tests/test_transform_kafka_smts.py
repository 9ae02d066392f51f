"""Kafka Connect's transforms and predicates on cdc's records: what Kafka 3.9's would write."""

from __future__ import annotations

import base64

import pytest

from cdc_core.config import Config
from cdc_core.errors import ConfigError
from cdc_core.events import ChangeRecord, Checkpoint
from cdc_core.plugins import registry
from cdc_core.schema import Schema, struct
from cdc_core.transforms.chain import build_chain

K = "org.apache.kafka.connect.transforms."
JSON_TYPES = {"float32": "float", "float64": "double"}
DECIMAL = Schema("bytes", optional=True, name="org.apache.kafka.connect.data.Decimal", version=1,
                 parameters={"scale": "2"})
ROW = struct("db.public.t.Value", [("id", Schema("int32")), ("name", Schema("string", optional=True)),
                                   ("qty", Schema("int64", optional=True, default=5)), ("price", DECIMAL),
                                   ("addr", struct("Addr", [("city", Schema("string", optional=True))], optional=True))])
KEY = struct("db.public.t.Key", [("id", Schema("int32"))])


def record(value=None, topic="db.public.t", headers=None):
    value = {"id": 1, "name": "Ann", "qty": None, "price": base64.b64encode((1234).to_bytes(2, "big")).decode(),
             "addr": {"city": "Oslo"}} if value is None else value
    return ChangeRecord(topic, {"id": 1}, value, KEY, ROW, {"lsn": 9}, dict(headers or {}))


def run(options: dict, *records, predicates: dict | None = None):
    props = {"transforms": "t", **{f"transforms.t.{k}": v for k, v in options.items()}, **(predicates or {})}
    return build_chain(Config(props), registry()).apply(list(records))


def test_regex_router_uses_java_groups_and_leaves_other_topics() -> None:
    out = run({"type": f"{K}RegexRouter", "regex": r"db\.public\.(.*)", "replacement": "x_$1"},
              record(), record(topic="other"))
    assert [r.topic for r in out] == ["x_t", "other"]


def test_replace_field_include_exclude_renames_and_the_old_names() -> None:
    r = run({"type": f"{K}ReplaceField$Value", "exclude": "price,addr", "renames": "name:full_name"}, record())[0]
    assert r.value == {"id": 1, "full_name": "Ann", "qty": 5}  # Struct.get: the null takes its default
    assert r.value_schema.field_names == ("id", "full_name", "qty") and r.value_schema.optional is False
    r = run({"type": f"{K}ReplaceField$Value", "whitelist": "id,name"}, record())[0]
    assert r.value == {"id": 1, "name": "Ann"}
    r = run({"type": f"{K}ReplaceField$Value", "blacklist": "name", "replace.null.with.default": "false"}, record())[0]
    assert "name" not in r.value and r.value["qty"] is None
    tomb = record()
    tomb.value = None
    assert run({"type": f"{K}ReplaceField$Value", "exclude": "name"}, tomb)[0].value is None


def test_insert_field_topic_static_and_timestamp() -> None:
    r = run({"type": f"{K}InsertField$Value", "topic.field": "t!", "static.field": "origin", "static.value": "cdc",
             "timestamp.field": "ts"}, record({"id": 1, "ts_ms": 1700000000000}))[0]
    assert r.value["t"] == "db.public.t" and r.value["origin"] == "cdc" and r.value["ts"] == 1700000000000
    fields = {f.name: f.schema for f in r.value_schema.fields}
    assert fields["t"].optional is False and fields["origin"].optional is True
    assert fields["ts"].name == "org.apache.kafka.connect.data.Timestamp"
    with pytest.raises(ConfigError, match="transforms.t.offset.field"):
        run({"type": f"{K}InsertField$Value", "offset.field": "o"})


def test_value_to_key_and_extract_field() -> None:
    r = run({"type": f"{K}ValueToKey", "fields": "name,id"}, record())[0]
    assert r.key == {"name": "Ann", "id": 1} and r.key_schema.field_names == ("name", "id") and r.key_schema.name is None
    r = run({"type": f"{K}ExtractField$Key", "field": "id"}, record())[0]
    assert r.key == 1 and r.key_schema.type == "int32"
    r = run({"type": f"{K}ExtractField$Value", "field": "addr.city", "field.syntax.version": "V2"}, record())[0]
    assert r.value == "Oslo"


def test_mask_field_cast_flatten_header_from() -> None:
    r = run({"type": f"{K}MaskField$Value", "fields": "name,id,price"}, record())[0]
    assert (r.value["name"], r.value["id"], r.value["price"]) == ("", 0, "AA==") and r.value_schema is ROW
    r = run({"type": f"{K}MaskField$Value", "fields": "name", "replacement": "***"}, record())[0]
    assert r.value["name"] == "***"
    r = run({"type": f"{K}Cast$Value", "spec": "id:string,price:float64,qty:int8"}, record())[0]
    assert (r.value["id"], r.value["price"], r.value["qty"]) == ("1", 12.34, 5)
    assert {f.name: f.schema.type for f in r.value_schema.fields}["price"] == "float64"
    r = run({"type": f"{K}Flatten$Value", "delimiter": "_"}, record())[0]
    assert r.value["addr_city"] == "Oslo" and "addr_city" in r.value_schema.field_names
    r = run({"type": f"{K}HeaderFrom$Value", "fields": "name", "headers": "who", "operation": "move"}, record())[0]
    assert r.headers == {"who": "Ann"} and "name" not in r.value and "name" not in r.value_schema.field_names


def test_timestamp_router_formats_the_event_time() -> None:
    r = run({"type": f"{K}TimestampRouter", "topic.format": "${topic}-${timestamp}", "timestamp.format": "yyyy-MM-dd"},
            record({"id": 1, "ts_ms": 1700000000000}))[0]
    assert r.topic == "db.public.t-2023-11-14"


@pytest.mark.parametrize("predicate, options, kept_topics", [
    ("TopicNameMatches", {"pattern": "db\\..*"}, ["x", "other"]),
    ("HasHeaderKey", {"name": "h"}, ["db.public.t", "x"]),
    ("RecordIsTombstone", {}, ["db.public.t", "x"]),
])
def test_predicates_choose_the_records_a_transform_sees(predicate: str, options: dict, kept_topics: list) -> None:
    tomb = record(topic="other", headers={"h": 1})
    tomb.value = None
    preds = {"predicates": "p", "predicates.p.type": f"{K}predicates.{predicate}",
             **{f"predicates.p.{k}": v for k, v in options.items()}, "transforms.t.predicate": "p"}
    out = run({"type": f"{K}RegexRouter", "regex": ".*", "replacement": "x"}, record(), tomb, predicates=preds)
    assert sorted(r.topic for r in out) == sorted(kept_topics)


def test_dropped_record_leaves_its_offset_and_checkpoints_pass() -> None:
    out = run({"type": "ExtractNewRecordState"}, Checkpoint({"lsn": 1}),
              ChangeRecord("t", None, None, None, None, {"lsn": 2}), ChangeRecord("t", None, None, None, None, None))
    assert out == [Checkpoint({"lsn": 1}), Checkpoint({"lsn": 2})]


def test_kafka_filter_with_a_predicate_drops_tombstones_and_headers_come_and_go() -> None:
    tomb = record(headers={"drop": ["x"]})
    tomb.value = None
    preds = {"predicates": "t", "predicates.t.type": f"{K}predicates.RecordIsTombstone"}
    props = {"transforms": "f,i,d", "transforms.f.type": f"{K}Filter", "transforms.f.predicate": "t",
             "transforms.i.type": f"{K}InsertHeader", "transforms.i.header": "n", "transforms.i.value.literal": "42",
             "transforms.d.type": f"{K}DropHeaders", "transforms.d.headers": "drop", **preds}
    out = build_chain(Config(props), registry()).apply([record(headers={"drop": ["x"], "keep": 1}), tomb])
    assert out[0].headers == {"keep": 1, "n": 42} and out[1] == Checkpoint({"lsn": 9})


def test_hoist_field_and_set_schema_metadata() -> None:
    r = run({"type": f"{K}HoistField$Key", "field": "k"}, record())[0]
    assert r.key == {"k": {"id": 1}} and r.key_schema.field("k").schema is KEY and r.key_schema.name is None
    r = run({"type": f"{K}SetSchemaMetadata$Value", "schema.name": "x.Row", "schema.version": "2"}, record())[0]
    assert (r.value_schema.name, r.value_schema.version, r.value_schema.field_names) == ("x.Row", 2, ROW.field_names)


def test_a_failing_transform_is_named_with_its_alias_and_topic() -> None:
    from cdc_core.errors import ConnectorError

    props = {"transforms": "ok,bad", "transforms.ok.type": f"{K}RegexRouter", "transforms.ok.regex": "nothing",
             "transforms.ok.replacement": "x", "transforms.bad.type": f"{K}ExtractField$Value",
             "transforms.bad.field": "missing"}
    with pytest.raises(ConnectorError, match=r"transforms\.bad \(ExtractFieldValue\) failed on a record of topic 'db.public.t'"):
        build_chain(Config(props), registry()).apply([record()])


def test_timestamp_converter_reads_and_writes_each_type() -> None:
    ts = Schema("int64", optional=True, name="org.apache.kafka.connect.data.Timestamp", version=1)
    row = struct("T", [("ts", ts), ("text", Schema("string", optional=True))])
    rec = ChangeRecord("t", None, {"ts": 1709618828009, "text": "05/03/2024 18:07"}, None, row, {"lsn": 1})
    r = run({"type": f"{K}TimestampConverter$Value", "field": "ts", "target.type": "string",
             "format": "yyyy-MM-dd'T'HH:mm:ss.SSS"}, rec)[0]
    assert r.value["ts"] == "2024-03-05T06:07:08.009" and r.value_schema.field("ts").schema.type == "string"
    r = run({"type": f"{K}TimestampConverter$Value", "field": "text", "target.type": "Date",
             "format": "dd/MM/yyyy HH:mm"}, r)[0]
    assert r.value["text"] == 19787 and r.value_schema.field("text").schema.name == "org.apache.kafka.connect.data.Date"
    with pytest.raises(ConfigError, match="transforms.t.format: TimestampConverter needs a format"):
        run({"type": f"{K}TimestampConverter$Value", "field": "ts", "target.type": "string"})


@pytest.mark.parametrize("text, schema_type, value", [
    ("cdc", "string", "cdc"), ("true", "boolean", True), ("FALSE", "string", "FALSE"), ("42", "int8", 42),
    ("300", "int16", 300), ("70000", "int32", 70000), ("-5000000000", "int64", -5000000000), ("1.0", "int8", 1),
    ("1e3", "int16", 1000), ("-0.25", "float32", -0.25), ("1.2.3", "string", "1.2.3"),
])
def test_insert_header_types_its_literal_as_values_parse_string(text, schema_type, value) -> None:
    """The header's value and Connect schema, as Kafka 3.9's ``Values.parseString`` (checked by the differential test)."""
    (r,) = run({"type": f"{K}InsertHeader", "header": "h", "value.literal": text}, record())
    assert r.headers == {"h": value} and type(r.headers["h"]) is type(value)
    assert {k: v.to_json() for k, v in r.header_schemas.items()} == {"h": {"type": JSON_TYPES.get(schema_type, schema_type),
                                                                            "optional": False}}


def test_headers_carry_the_schemas_they_were_made_with() -> None:
    """HeaderFrom: the field's schema (none for a schemaless record); add.headers: the field's, optional."""
    (r,) = run({"type": f"{K}HeaderFrom$Value", "fields": "id,name", "headers": "i,n", "operation": "copy"}, record())
    assert r.headers == {"i": 1, "n": "Ann"}
    assert r.header_schemas == {"i": ROW.field("id").schema, "n": ROW.field("name").schema}
    schemaless = record()
    other = Schema("string")
    schemaless.value_schema, schemaless.header_schemas = None, {"i": Schema("int8"), "other": other}
    (r,) = run({"type": f"{K}HeaderFrom$Value", "fields": "id", "headers": "i", "operation": "copy"}, schemaless)
    assert r.headers == {"i": 1} and r.header_schemas == {"other": other}


def test_set_header_schemas_merges_and_forgets() -> None:
    r = record()
    assert r.header_schemas is None
    a = Schema("int8")
    r.set_header_schemas({"a": a, "b": None})
    assert r.header_schemas == {"a": a}
    r.set_header_schemas({"a": None})
    assert r.header_schemas is None
