"""Filter and ContentBasedRouter on change events captured from a real PostgreSQL by the library Engine."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from cdc_core.config import Config
from cdc_core.errors import ConfigError, ConnectorError
from cdc_core.events import ChangeRecord
from cdc_core.serializers.json import JsonSerializer
from cdc_core.transforms.content_router import ContentBasedRouter
from cdc_core.transforms.filter import Filter
from cdc_postgres.testing import _drop_database as drop_database
from kit.engine import EngineThread


def capture(pg, db: str, statements: list[str], count: int, tables: str = "inventory.customers,inventory.orders",
            **extra: Any) -> list[ChangeRecord]:
    """The records of ``statements`` (run once streaming), after the snapshot of what the tables held."""
    config = {"connector.class": "postgres", "database.hostname": pg.host, "database.port": pg.port,
              "database.user": pg.user, "database.dbname": db, "topic.prefix": "dbserver1", "slot.name": db,
              "table.include.list": tables, "poll.interval.ms": 50, **extra}
    engine = EngineThread(config).start()
    try:
        deadline = time.monotonic() + 30
        while not engine.engine.metrics.streaming.connected and time.monotonic() < deadline:
            time.sleep(0.05)
        for sql in statements:
            pg.execute(sql, dbname=db)
        engine.wait(lambda rs: len(rs) >= count, f"{count} records")
        time.sleep(0.3)
        return engine.snapshot()
    finally:
        engine.stop()


SETUP = [
    "CREATE SCHEMA inventory",
    "CREATE TABLE inventory.customers (id int PRIMARY KEY, first_name text, last_name text, email text)",
    "CREATE TABLE inventory.orders (id int PRIMARY KEY, purchaser int, quantity int)",
    "INSERT INTO inventory.customers VALUES (1, 'Sally', 'Thomas', 'sally.thomas@acme.com'), "
    "(2, 'George', 'Bailey', 'gbailey@foobar.com')",
]
CHANGES = [
    "UPDATE inventory.customers SET first_name = 'Anne Marie' WHERE id = 2",
    "UPDATE inventory.customers SET first_name = 'Sal' WHERE id = 1",
    "INSERT INTO inventory.orders VALUES (10001, 1, 1), (10002, 2, 250)",
    "DELETE FROM inventory.customers WHERE id = 1",
]


@pytest.fixture(scope="module")
def events(pg_server) -> dict[str, list[ChangeRecord]]:
    """The same changes captured twice: with the default replica identity and with REPLICA IDENTITY FULL."""
    out = {}
    for identity in ("DEFAULT", "FULL"):
        db = f"scripting_{identity.lower()}_{uuid.uuid4().hex[:8]}"
        pg_server.create_database(db)
        try:
            for sql in [*SETUP, f"ALTER TABLE inventory.customers REPLICA IDENTITY {identity}"]:
                pg_server.execute(sql, dbname=db)
            # 2 snapshot reads, 2 updates, 2 inserts, a delete and its tombstone.
            out[identity] = capture(pg_server, db, CHANGES, 8)
        finally:
            drop_database(pg_server, db)
    return out


def transform(cls: type, **props: Any) -> Any:
    """The transform ``cls`` configured as ``transforms.<alias>.*`` would configure it."""
    return cls(Config({"type": cls.class_names[0], **props}))


def summary(records: list[ChangeRecord | None]) -> list[tuple[str, str | None, Any]]:
    """(topic, op, key id) of each record kept."""
    return [(r.topic, r.value["op"] if r.value else None, r.key["id"]) for r in records if r is not None]


def test_the_documented_filter_keeps_only_the_update_of_id_2(events):
    f = transform(Filter, language="jsr223.groovy", condition="value.op == 'u' && value.before.id == 2")
    kept = [f.apply(r) for r in events["FULL"]]
    # Tombstones pass (null.handling.mode=keep); everything else but the update of customer 2 is dropped.
    assert summary(kept) == [("dbserver1.inventory.customers", "u", 2), ("dbserver1.inventory.customers", None, 1)]
    kept_update = next(r for r in kept if r is not None and r.value)
    assert kept_update is next(r for r in events["FULL"] if r.value and r.value["op"] == "u")


def test_the_documented_filter_stops_on_an_update_without_before_as_debezium_does(events):
    # With the default replica identity, PostgreSQL sends no old row: Groovy's value.before.id throws
    # (NullPointerException) and Debezium's connector stops. So does cdc, saying where and why.
    f = transform(Filter, language="jsr223.groovy", condition="value.op == 'u' && value.before.id == 2")
    with pytest.raises(ConnectorError) as e:
        for r in events["DEFAULT"]:
            f.apply(r)
    message = str(e.value)
    assert "io.debezium.transforms.Filter: condition \"value.op == 'u' && value.before.id == 2\" failed" in message
    assert "of topic 'dbserver1.inventory.customers'" in message and "'lsn'" in message
    assert "cannot read 'id' of null (value.before is null) at column 33" in message
    # The safe navigation operator lets the null through.
    safe = transform(Filter, language="jsr223.groovy", condition="value.op == 'u' && value.before?.id == 2")
    assert summary(safe.apply(r) for r in events["DEFAULT"]) == [("dbserver1.inventory.customers", None, 1)]


def test_the_javascript_form_and_graal_js(events):
    js = transform(Filter, language="jsr223.graal.js",
                   condition="value.get('op') == 'u' && value.get('before').get('id') == 2")
    groovy = transform(Filter, language="jsr223.groovy", condition="value.op == 'u' && value.before.id == 2")
    assert [js.apply(r) for r in events["FULL"]] == [groovy.apply(r) for r in events["FULL"]]


def test_null_handling_modes_decide_the_tombstone(events):
    records = events["FULL"]
    tombstones = [r for r in records if r.value is None]
    assert len(tombstones) == 1
    keep = transform(Filter, language="cdc", condition="value.op == 'c'")
    drop = transform(Filter, language="cdc", condition="value.op == 'c'", **{"null.handling.mode": "drop"})
    evaluate = transform(Filter, language="cdc", condition="value == null || value.op == 'c'",
                         **{"null.handling.mode": "evaluate"})
    creates = [("dbserver1.inventory.orders", "c", 10001), ("dbserver1.inventory.orders", "c", 10002)]
    assert summary(keep.apply(r) for r in records) == [*creates, ("dbserver1.inventory.customers", None, 1)]
    assert summary(drop.apply(r) for r in records) == creates
    assert summary(evaluate.apply(r) for r in records) == [*creates, ("dbserver1.inventory.customers", None, 1)]
    # Evaluated, a tombstone has no value.op: the engine stops as Debezium's does.
    strict = transform(Filter, language="cdc", condition="value.op == 'c'", **{"null.handling.mode": "EVALUATE"})
    with pytest.raises(ConnectorError, match=r"cannot read 'op' of null \(value is null\) at column 7"):
        strict.apply(tombstones[0])


def test_topic_regex_limits_the_filter_to_matching_topics(events):
    f = transform(Filter, language="jsr223.groovy", condition="value.after.quantity > 100",
                  **{"topic.regex": r"dbserver1\.inventory\.ord.*"})
    kept = summary(f.apply(r) for r in events["FULL"])
    assert ("dbserver1.inventory.orders", "c", 10002) in kept and ("dbserver1.inventory.orders", "c", 10001) not in kept
    assert [k for k in kept if k[0].endswith("customers")] == [k for k in summary(events["FULL"])
                                                                if k[0].endswith("customers")]
    # A full match, as Java's Matcher.matches: a prefix alone does not select the topic.
    partial = transform(Filter, language="cdc", condition="false", **{"topic.regex": "dbserver1"})
    assert summary(partial.apply(r) for r in events["FULL"]) == summary(events["FULL"])


def test_the_documented_router_sends_updates_to_the_updates_topic(events):
    router = transform(ContentBasedRouter, language="jsr223.groovy",
                       **{"topic.expression": "value.op == 'u' ? 'updates' : null"})
    routed = [router.apply(r) for r in events["DEFAULT"]]
    assert summary(routed) == [
        ("dbserver1.inventory.customers", "r", 1), ("dbserver1.inventory.customers", "r", 2),
        ("updates", "u", 2), ("updates", "u", 1),
        ("dbserver1.inventory.orders", "c", 10001), ("dbserver1.inventory.orders", "c", 10002),
        ("dbserver1.inventory.customers", "d", 1), ("dbserver1.inventory.customers", None, 1)]
    # Only the topic changes: the serialized key and value are the original's.
    before = JsonSerializer().serialize([r for r in events["DEFAULT"] if r.value and r.value["op"] == "u"])
    after = JsonSerializer().serialize([r for r in routed if r.topic == "updates"])
    assert [(s.key, s.value) for s in before] == [(s.key, s.value) for s in after]
    assert {s.topic for s in after} == {"updates"}


def test_router_builds_topics_from_the_content(events):
    router = transform(ContentBasedRouter, language="jsr223.groovy",
                       **{"topic.expression": "value.source.table + (value.op == 'd' ? '.deletes' : '.changes')"})
    topics = [r.topic for r in (router.apply(r) for r in events["FULL"]) if r.value]
    assert topics == ["customers.changes"] * 4 + ["orders.changes"] * 2 + ["customers.deletes"]
    bad = transform(ContentBasedRouter, language="cdc", **{"topic.expression": "value.after.id"})
    with pytest.raises(ConnectorError, match="the expression gave the number 1, not a string"):
        bad.apply(events["FULL"][0])


@pytest.mark.parametrize("props, problem", [
    ({"language": "jsr223.groovy", "condition": "value.op = 'u'"},
     "condition: cannot use \"value.op = 'u'\": an assignment is not part of the expression language at column 10"),
    ({"language": "jsr223.groovy", "condition": "Runtime.getRuntime().exec('id')"},
     "condition: cannot use \"Runtime.getRuntime().exec('id')\": unknown name 'Runtime'"),
    ({"language": "jsr223.python", "condition": "true"}, "language: 'jsr223.python' is not supported"),
    ({"condition": "true"}, "language: is required"),
    ({"language": "cdc"}, "condition: is required and has no value"),
    ({"language": "cdc", "condition": "true", "null.handling.mode": "skip"},
     "null.handling.mode: 'skip' is not one of: keep, drop, evaluate"),
    ({"language": "cdc", "condition": "true", "topic.regex": "(unclosed"},
     "topic.regex: '(unclosed' is not a valid regular expression"),
])
def test_bad_configurations_are_refused_at_start(props, problem):
    with pytest.raises(ConfigError) as e:
        transform(Filter, **props)
    assert any(problem in p for p in e.value.problems), e.value.problems


def test_router_expression_refused_naming_its_property():
    with pytest.raises(ConfigError) as e:
        transform(ContentBasedRouter, language="jsr223.graal.js", **{"topic.expression": "value.op == 'u' ? 'x'"})
    assert e.value.problems == ["topic.expression: cannot use \"value.op == 'u' ? 'x'\": expected ':' of the "
                                "conditional 'test ? a : b', found the end of the expression at column 22"]


def test_a_heartbeat_is_not_an_update(pg_server):
    # cdc's PostgreSQL connector sends heartbeats by default (Debezium does not): their value has only
    # ts_ms, and a condition reading value.op sees null there instead of stopping the engine.
    db = f"scripting_hb_{uuid.uuid4().hex[:8]}"
    pg_server.create_database(db)
    try:
        for sql in SETUP:
            pg_server.execute(sql, dbname=db)
        records = capture(pg_server, db, [], 3, **{"heartbeat.interval.ms": "100"})
    finally:
        drop_database(pg_server, db)
    heartbeat = next(r for r in records if r.topic == "__debezium-heartbeat.dbserver1")
    assert set(heartbeat.value) == {"ts_ms"}
    f = transform(Filter, language="jsr223.groovy", condition="value.op == 'u' && value.before.id == 2")
    assert f.apply(heartbeat) is None
    router = transform(ContentBasedRouter, language="jsr223.groovy",
                       **{"topic.expression": "value.op == 'u' ? 'updates' : null"})
    assert router.apply(heartbeat) is heartbeat


def test_yaml_scalars_and_language_case():
    keep_all = transform(Filter, language="JSR223.Groovy", condition=True)
    record = ChangeRecord("t", None, {"op": "c"}, None, None)
    assert keep_all.apply(record) is record
    assert transform(Filter, language="cdc", condition=False).apply(record) is None
