"""ExtractNewRecordState and ByLogicalTableRouter: the chapters' examples and the spec's scenarios, as data
(``tests/data/transforms/*.yaml``), run through the same chain the engine uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from cdc_core.config import Config
from cdc_core.errors import ConfigError
from cdc_core.events import ChangeRecord, Checkpoint
from cdc_core.plugins import registry
from cdc_core.schema import Schema, struct
from cdc_core.transforms.chain import build_chain

DATA = Path(__file__).parents[3] / "tests" / "data" / "transforms"
UNWRAP = yaml.safe_load((DATA / "extract_new_record_state.yaml").read_text())
ROUTER = yaml.safe_load((DATA / "by_logical_table_router.yaml").read_text())
TOPIC = "dbserver1.inventory.t"


def _schema_of(value: Any) -> Schema:
    if isinstance(value, bool):
        return Schema("boolean", optional=True)
    if isinstance(value, int):
        return Schema("int64" if value > 2**31 else "int32", optional=True)
    return Schema("string", optional=True)


def _row_schema(topic: str, rows: list[dict | None]) -> Schema:
    fields: dict[str, Schema] = {}
    for row in rows:
        for name, value in (row or {}).items():
            if name not in fields or value is not None:
                fields[name] = _schema_of(value)
    return struct(f"{topic}.Value", list(fields.items()), optional=True)


def envelope_record(topic: str, key: dict, value: dict | None, offset: int = 1) -> ChangeRecord:
    """A Debezium change record with schemas shaped as Debezium's (Key, Value, Envelope, Source)."""
    key_schema = struct(f"{topic}.Key", [(k, Schema("int32")) for k in key])
    if value is None:
        return ChangeRecord(topic, key, None, key_schema, None, {"lsn": offset})
    row = _row_schema(topic, [value.get("before"), value.get("after")])
    source = struct("io.debezium.connector.postgresql.Source",
                    [(k, _schema_of(v).with_optional(False)) for k, v in value["source"].items()])
    envelope = struct(f"{topic}.Envelope", [("before", row), ("after", row), ("source", source),
                                            ("transaction", Schema("struct", optional=True, name="event.block")),
                                            ("op", Schema("string")), ("ts_ms", Schema("int64", optional=True))])
    return ChangeRecord(topic, dict(key), dict(value), key_schema, envelope, {"lsn": offset})


def _chain(alias: str, options: dict[str, str]):
    props = {"transforms": alias, **{f"transforms.{alias}.{k}": v for k, v in options.items()}}
    return build_chain(Config(props), registry())


@pytest.mark.parametrize("case", UNWRAP["cases"], ids=[c["id"] for c in UNWRAP["cases"]])
def test_extract_new_record_state_as_the_chapter_says(case: dict) -> None:
    chain = _chain("unwrap", {"type": "io.debezium.transforms.ExtractNewRecordState", **case["config"]})
    for name, expected in case["expect"].items():
        spec = UNWRAP["records"][name]
        record = envelope_record(TOPIC, spec["key"], spec["value"])
        out = chain.apply([record])
        assert len(out) == 1
        if expected is None:  # dropped: only its offset is left, to be committed
            assert out == [Checkpoint({"lsn": 1})], f"{name} should be dropped"
            continue
        r = out[0]
        assert isinstance(r, ChangeRecord), f"{name} was dropped"
        assert r.topic == expected.get("topic", TOPIC)
        assert r.key == expected.get("key", spec["key"])
        if "value" in expected:
            assert orjson.dumps(r.value).decode() == expected["value"], name
        if "value_schema" in expected:
            assert r.value_schema is expected["value_schema"]
        if "headers" in expected:
            assert r.headers == expected["headers"]
        assert r.offset == {"lsn": 1}


def test_flattened_value_schema_is_the_row_schema_made_required_with_added_fields() -> None:
    chain = _chain("u", {"type": "ExtractNewRecordState", "add.fields": "op,source.ts_ms", "delete.handling.mode": "rewrite"})
    spec = UNWRAP["records"]["C"]
    r = chain.apply([envelope_record(TOPIC, spec["key"], spec["value"])])[0]
    schema = r.value_schema.to_json()
    assert schema["name"] == f"{TOPIC}.Value" and schema["optional"] is False
    assert [f["field"] for f in schema["fields"]] == ["pk", "destination", "__deleted", "__op", "__source_ts_ms"]
    assert schema["fields"][2] == {"type": "string", "optional": True, "field": "__deleted"}
    assert schema["fields"][3] == {"type": "string", "optional": True, "field": "__op"}


def test_non_envelope_records_and_truncates() -> None:
    chain = _chain("u", {"type": "ExtractNewRecordState"})
    heartbeat = ChangeRecord("__debezium-heartbeat.x", {"serverName": "x"}, {"ts_ms": 1}, None,
                             struct("io.debezium.connector.common.Heartbeat", [("ts_ms", Schema("int64"))]), {"lsn": 5})
    spec = UNWRAP["records"]["C"]
    truncate = envelope_record(TOPIC, {}, {**spec["value"], "op": "t", "after": None}, offset=6)
    out = chain.apply([heartbeat, Checkpoint({"lsn": 7}), truncate])
    assert out == [heartbeat, Checkpoint({"lsn": 7}), Checkpoint({"lsn": 6})]


@pytest.mark.parametrize("case", ROUTER["cases"], ids=[c["id"] for c in ROUTER["cases"]])
def test_by_logical_table_router_as_the_chapter_says(case: dict) -> None:
    chain = _chain("Reroute", {**ROUTER["base"], **case["config"]})
    for spec in case["records"]:
        after = {"id": 1, "name": "n"}
        source = {"db": "mydb", "table": "t"}
        r = chain.apply([envelope_record(spec["topic"], {"id": 1}, {"op": "c", "source": source, "ts_ms": 1,
                                                                      "before": None, "after": after})])[0]
        assert r.topic == spec.get("expect_topic", r.topic)
        if "expect_key" in spec:
            assert orjson.dumps(r.key).decode() == spec["expect_key"]
        if "expect_key_schema" in spec:
            assert r.key_schema.name == spec["expect_key_schema"]
        if r.topic != spec["topic"]:  # the envelope and row schemas are renamed after the new topic
            assert r.value_schema.name.endswith(".Envelope") and r.value_schema.name.startswith(
                r.topic.replace("-", "_") if "avro" in str(case["config"]) else r.topic)
            assert r.value_schema.field("after").schema.name == r.value_schema.name[: -len("Envelope")] + "Value"


def test_predicate_excludes_one_shard_from_the_router() -> None:
    """AS-15: with TopicNameMatches on shard 3 and negate=true, shard 3 keeps its topic."""
    props = {"transforms": "Reroute", "predicates": "isShard3", **{f"transforms.Reroute.{k}": v for k, v in ROUTER["base"].items()},
             "transforms.Reroute.predicate": "isShard3", "transforms.Reroute.negate": "true",
             "predicates.isShard3.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
             "predicates.isShard3.pattern": ".*customers_shard3"}
    chain = build_chain(Config(props), registry())
    value = {"op": "c", "source": {"db": "mydb"}, "ts_ms": 1, "before": None, "after": {"id": 1}}
    out = chain.apply([envelope_record("myserver.mydb.customers_shard1", {"id": 1}, value),
                       envelope_record("myserver.mydb.customers_shard3", {"id": 1}, value)])
    assert [r.topic for r in out] == ["myserver.mydb.customers_all_shards", "myserver.mydb.customers_shard3"]


@pytest.mark.parametrize("props, problem", [
    ({"transforms": "u", "transforms.u.type": "io.debezium.transforms.Nope"}, "transforms.u.type: no transform called"),
    ({"transforms": "u"}, "transforms.u.type: is required"),
    ({"transforms": "u", "transforms.u.type": "unwrap", "transforms.u.delete.handling.mode": "keep"},
     "transforms.u.delete.handling.mode: 'keep' is not one of: drop, rewrite, none"),
    ({"transforms": "u", "transforms.u.type": "unwrap", "transforms.u.drop.tombstone": "false"},
     "transforms.u.drop.tombstone: unknown property"),
    ({"transforms": "r", "transforms.r.type": "ByLogicalTableRouter", "transforms.r.topic.regex": "(.*"},
     "transforms.r.topic.regex: '(.*' is not a valid regular expression"),
    ({"transforms": "r", "transforms.r.type": "ByLogicalTableRouter", "transforms.r.topic.regex": "a",
      "transforms.r.topic.replacement": "b", "transforms.r.key.field.regex": "x"},
     "transforms.r.key.field.replacement: must be non-empty if key.field.regex is set"),
    ({"transforms": "u", "transforms.u.type": "unwrap", "transforms.u.predicate": "p"},
     "transforms.u.predicate: 'p' is not listed in predicates"),
    ({"transforms": "u", "transforms.u.type": "unwrap", "transforms.x.type": "unwrap"},
     "transforms.x.type: its alias is not listed in transforms"),
    ({"predicates": "p", "predicates.p.type": "TopicNameMatches"}, "predicates.p.pattern: is required"),
])
def test_bad_transform_configuration_is_refused_naming_the_property(props: dict, problem: str) -> None:
    with pytest.raises(ConfigError) as e:
        build_chain(Config(props), registry())
    assert any(p.startswith(problem) for p in e.value.problems), e.value.problems


def test_no_transforms_means_no_chain() -> None:
    assert build_chain(Config({}), registry()) is None
    assert build_chain(Config({"transforms": ""}), registry()) is None


def test_read_to_insert_event_turns_snapshot_reads_into_inserts() -> None:
    """The MySQL chapter's ReadToInsertEvent: ``r`` becomes ``c``; other operations and non-envelopes pass as they are."""
    chain = _chain("snapshotasinsert", {"type": "io.debezium.connector.mysql.transforms.ReadToInsertEvent"})
    read = envelope_record("fulfillment.inventory.customers", {"id": 1},
                           {"before": None, "after": {"id": 1}, "source": {"db": "inventory"}, "op": "r", "ts_ms": 1})
    update = envelope_record("fulfillment.inventory.customers", {"id": 1},
                             {"before": {"id": 1}, "after": {"id": 1}, "source": {"db": "inventory"}, "op": "u",
                              "ts_ms": 2}, offset=2)
    tombstone = envelope_record("fulfillment.inventory.customers", {"id": 1}, None, offset=3)
    out = chain.apply([read, update, tombstone])
    assert [r.value["op"] if r.value else None for r in out] == ["c", "u", None]
