"""The outbox EventRouter beside the real Debezium 3.0.7's: the same outbox table, the same options, the same events.

Debezium's embedded engine runs its own ``io.debezium.transforms.outbox.EventRouter``
(``transforms=outbox``); cdc's library Engine captures the same changes and runs cdc's EventRouter
through the same ``transforms=`` properties where cdc has the transform chain
(``cdc_core.transforms.chain``), or applies it to its records directly where it has not. Both sides
are written with Kafka's JsonConverter (schemas on) and compared record by record: topic, key,
value, headers.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import orjson
import pytest

from cdc_core.config import Config
from cdc_core.serializers.formats import build_serializer, settings_from_server
from cdc_core.transforms.outbox import EventRouter
from cdc_postgres.testing import _drop_database as drop_database
from conformance.check import require_real_debezium
from conformance.debezium import DebeziumProcess
from kit.engine import EngineThread
from test_outbox_postgres import CHAPTER_ROW

#: Debezium Server's default formats: JSON keys and values, headers {"schema","payload"} (as the runner writes them).
_SERVER = build_serializer(settings_from_server({}))

TABLE = """CREATE SCHEMA inventory;
CREATE TABLE inventory.outboxevent (id uuid NOT NULL PRIMARY KEY, aggregatetype varchar(255) NOT NULL,
                                    aggregateid varchar(255) NOT NULL, type varchar(255) NOT NULL, payload jsonb,
                                    version int NOT NULL DEFAULT 1)"""
CHANGES = [
    "INSERT INTO inventory.outboxevent VALUES ('11111111-1111-1111-1111-111111111111', 'customers', '7', "
    "'CustomerCreated', '{\"name\": \"Ann\", \"tags\": [\"a\", \"b\"], \"vip\": true, \"score\": 1.5, "
    "\"note\": null}', 2)",
    "INSERT INTO inventory.outboxevent VALUES ('22222222-2222-2222-2222-222222222222', 'orders', '8', "
    "'OrderShipped', '{\"order\": 8, \"items\": [{\"sku\": \"x\", \"qty\": 1}, {\"sku\": \"y\", \"qty\": 2}], "
    "\"big\": 3000000000, \"empty\": [], \"nested\": {\"deep\": {\"x\": [true, null, false]}}}')",
    "UPDATE inventory.outboxevent SET type = 'Changed' WHERE aggregateid = '7'",
    "DELETE FROM inventory.outboxevent WHERE aggregateid = '8'",
    "INSERT INTO inventory.outboxevent VALUES ('33333333-3333-3333-3333-333333333333', 'Order', '1', "
    "'OrderDeleted', NULL)",
    "INSERT INTO inventory.outboxevent VALUES ('44444444-4444-4444-4444-444444444444', 'Order', '1', "
    "'OrderNoted', '\"just text\"')",
]
#: Records cdc captures: the snapshot row, the changes (see CHANGES) and the delete's tombstone.
RAW = 8
#: Events routed: the snapshot row and the four inserts (the update, the delete and its tombstone are dropped).
ROUTED = 5
try:
    import cdc_core.transforms.chain  # noqa: F401  (the transform chain: transforms= in the Engine)

    CHAIN = True
except ImportError:
    CHAIN = False

CONFIGS = {
    "defaults": {},
    "placements": {"table.fields.additional.placement": "type:header:eventType,type:envelope:eventType,"
                                                        "aggregateid:envelope:key",
                   "route.tombstone.on.empty.payload": "true", "table.field.event.schema.version": "version"},
    "expanded": {"table.expand.json.payload": "true",
                 "table.fields.additional.placement": "type:envelope", "route.by.field": "type",
                 "route.topic.regex": "(?<kind>Order|Customer)(.*)", "route.topic.replacement": "${kind}.$2.events"},
}


def _active(pg, db: str, slot: str) -> bool:
    rows = pg.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", params=(slot,), dbname=db)
    return bool(rows and rows[0][0])


@pytest.mark.parametrize("name", list(CONFIGS))
def test_outbox_event_router_matches_debezium(pg_server, tmp_path, name):
    require_real_debezium()
    options = CONFIGS[name]
    db = f"outbox_conf_{uuid.uuid4().hex[:8]}"
    pg_server.create_database(db)
    suffix = uuid.uuid4().hex[:8]
    common = {"database.hostname": pg_server.host, "database.port": pg_server.port, "database.user": pg_server.user,
              "database.password": "unused", "database.dbname": db, "topic.prefix": "dbserver1",
              "plugin.name": "pgoutput", "table.include.list": "inventory.outboxevent", "heartbeat.interval.ms": "0"}
    debezium = cdc = None
    try:
        pg_server.execute(TABLE, dbname=db)
        pg_server.execute(CHAPTER_ROW, dbname=db)
        debezium = DebeziumProcess({
            "name": "outbox", "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "offset.storage": "org.apache.kafka.connect.storage.MemoryOffsetBackingStore",
            "offset.flush.interval.ms": "0", **common, "slot.name": f"dbz_{suffix}",
            "publication.name": f"dbz_pub_{suffix}", "transforms": "outbox",
            "transforms.outbox.type": "io.debezium.transforms.outbox.EventRouter",
            **{f"transforms.outbox.{k}": v for k, v in options.items()}}, tmp_path / "debezium")
        transforms = {"transforms": "outbox", "transforms.outbox.type": "io.debezium.transforms.outbox.EventRouter",
                      **{f"transforms.outbox.{k}": v for k, v in options.items()}}
        cdc = EngineThread({"connector.class": "postgres", **common, "slot.name": f"cdc_{suffix}",
                            "publication.name": f"cdc_pub_{suffix}", "poll.interval.ms": 50,
                            **(transforms if CHAIN else {})}).start()
        deadline = time.monotonic() + 90
        while not (_active(pg_server, db, f"dbz_{suffix}") and _active(pg_server, db, f"cdc_{suffix}")):
            assert debezium.alive(), debezium.failure()
            assert cdc.alive, f"cdc stopped: {cdc.error!r}"
            assert time.monotonic() < deadline, "both engines did not start streaming within 90 s"
            time.sleep(0.2)
        for sql in CHANGES:
            pg_server.execute(sql, dbname=db)
        if CHAIN:
            cdc.wait(lambda rs: len(rs) >= ROUTED, f"{ROUTED} routed events", timeout=60)
            ours = cdc.snapshot()
        else:
            cdc.wait(lambda rs: len(rs) >= RAW, f"{RAW} records", timeout=60)
            router = EventRouter(Config({"type": "io.debezium.transforms.outbox.EventRouter", **options}))
            ours = [r for r in (router.apply(r) for r in cdc.snapshot()) if r is not None]
        assert len(ours) == ROUTED
        mine = [{"topic": s.topic, "key": orjson.loads(s.key) if s.key else None,
                 "value": orjson.loads(s.value) if s.value else None, "headers": s.headers}
                for s in _SERVER.serialize(ours)]
        while len(debezium.records()) < len(mine):
            assert debezium.alive(), debezium.failure()
            assert time.monotonic() < deadline + 60, f"Debezium wrote {len(debezium.records())} of {len(mine)} events"
            time.sleep(0.2)
        time.sleep(1.0)  # anything more either side writes would be a difference too
        theirs = debezium.records()
        if CHAIN:
            mine = [{"topic": s.topic, "key": orjson.loads(s.key) if s.key else None,
                     "value": orjson.loads(s.value) if s.value else None, "headers": s.headers}
                    for s in _SERVER.serialize(cdc.snapshot())]
    finally:
        if cdc is not None:
            cdc.stop()
        if debezium is not None:
            debezium.stop()
        drop_database(pg_server, db)
    assert len(theirs) == len(mine), _show(theirs, mine)
    for a, b in zip(theirs, mine):
        assert a == b, _show([a], [b])


def _show(theirs: list[dict[str, Any]], mine: list[dict[str, Any]]) -> str:
    return ("Debezium:\n" + "\n".join(orjson.dumps(r).decode() for r in theirs)
            + "\ncdc:\n" + "\n".join(orjson.dumps(r).decode() for r in mine))
