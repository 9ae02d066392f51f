"""The outbox EventRouter on MariaDB beside the real Debezium 3.0.7's (its MySQL connector): snapshot reads routed alike.

Both engines snapshot the same outbox table (``snapshot.mode=initial_only``); Debezium runs its EventRouter through ``transforms=outbox``, cdc's EventRouter is
applied to the MariaDB connector's records (through ``transforms=`` where cdc has the chain).
Streaming, updates and deletes are compared on PostgreSQL (test_outbox_conformance_postgres.py).
"""

from __future__ import annotations

import random
import time

import orjson
import pytest

from cdc_core.config import Config
from cdc_core.serializers.formats import build_serializer, settings_from_server
from cdc_core.transforms.outbox import EventRouter
from conformance.check import require_real_debezium
from conformance.debezium import DebeziumProcess
from kit.engine import EngineThread
from test_outbox_conformance_postgres import CHAIN
from test_outbox_postgres import EVENT_ID, PAYLOAD

#: Debezium Server's default formats: JSON keys and values, headers {"schema","payload"} (as the runner writes them).
_SERVER = build_serializer(settings_from_server({}))

ROWS = [
    f"INSERT INTO outboxevent VALUES ('{EVENT_ID}', 'Order', '1', 'OrderCreated', '{PAYLOAD}')",
    "INSERT INTO outboxevent VALUES ('11111111-1111-1111-1111-111111111111', 'customers', '7', 'CustomerCreated', "
    "'{\"name\": \"Ann\", \"vip\": true}')",
    "INSERT INTO outboxevent VALUES ('33333333-3333-3333-3333-333333333333', 'Order', '1', 'OrderDeleted', NULL)",
]
OPTIONS = {"table.fields.additional.placement": "type:header:eventType,type:envelope:eventType",
           "route.tombstone.on.empty.payload": "true", "table.expand.json.payload": "true"}


@pytest.mark.parametrize("options", [{}, OPTIONS], ids=["defaults", "placements-expanded"])
def test_outbox_event_router_matches_debezium_on_mariadb(mariadb_server, mariadb_db, tmp_path, options):
    require_real_debezium()
    mariadb_server.execute([
        "CREATE TABLE outboxevent (id char(36) NOT NULL PRIMARY KEY, aggregatetype varchar(255) NOT NULL, "
        "aggregateid varchar(255) NOT NULL, type varchar(255) NOT NULL, payload json)", *ROWS], database=mariadb_db)
    server_ids = random.sample(range(100_000, 4_000_000), 2)
    common = {"database.hostname": mariadb_server.host, "database.port": mariadb_server.port,
              "database.user": mariadb_server.user, "database.password": mariadb_server.password,
              "database.include.list": mariadb_db, "table.include.list": f"{mariadb_db}.outboxevent",
              "topic.prefix": "dbserver1", "snapshot.mode": "initial_only",
              "include.schema.changes": "false"}
    transforms = {"transforms": "outbox", "transforms.outbox.type": "io.debezium.transforms.outbox.EventRouter",
                  **{f"transforms.outbox.{k}": v for k, v in options.items()}}
    debezium = DebeziumProcess({
        "name": "outbox", "connector.class": "io.debezium.connector.mysql.MySqlConnector",
        "offset.storage": "org.apache.kafka.connect.storage.MemoryOffsetBackingStore", "offset.flush.interval.ms": "0",
        "schema.history.internal": "io.debezium.relational.history.MemorySchemaHistory",
        "database.server.id": server_ids[0], **common, **transforms}, tmp_path / "debezium")
    cdc = EngineThread({"connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
                        "database.server.id": server_ids[1], **common, **(transforms if CHAIN else {})}).start()
    try:
        assert cdc.join(120) is None
        deadline = time.monotonic() + 120
        while len(debezium.records()) < len(ROWS):
            assert debezium.alive(), debezium.failure()
            assert time.monotonic() < deadline, f"Debezium wrote {len(debezium.records())} of {len(ROWS)} events"
            time.sleep(0.2)
        time.sleep(1.0)  # anything more it writes would be a difference too
    finally:
        debezium.stop()
    records = cdc.snapshot()
    if not CHAIN:
        router = EventRouter(Config({"type": "io.debezium.transforms.outbox.EventRouter", **options}))
        records = [r for r in (router.apply(r) for r in records) if r is not None]
    mine = [{"topic": s.topic, "key": orjson.loads(s.key) if s.key else None,
             "value": orjson.loads(s.value) if s.value else None, "headers": s.headers}
            for s in _SERVER.serialize(records)]
    theirs = debezium.records()
    assert len(mine) == len(ROWS)
    assert theirs == mine, ("Debezium:\n" + "\n".join(orjson.dumps(r).decode() for r in theirs)
                            + "\ncdc:\n" + "\n".join(orjson.dumps(r).decode() for r in mine))
