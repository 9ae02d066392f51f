"""snapshot.mode, replica identity and key changes, through ``cdc run`` against a real PostgreSQL."""

from __future__ import annotations

import time

import pytest

from cdc_process import CdcProcess, server_properties, write_properties

TOPIC = "dbserver1.public.t"


def _setup(pg, db, rows=3):
    pg.execute("CREATE TABLE t (id int PRIMARY KEY, v text NOT NULL)", dbname=db)
    pg.execute(f"INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, {rows}) g", dbname=db)


def _ops(events):
    return [None if e["value"] is None else e["value"]["payload"]["op"] for e in events]


def _start(pg, db, tmp_path, **source):
    config = write_properties(tmp_path / "app.properties", server_properties(pg, db, tmp_path, **source))
    return CdcProcess(config, tmp_path).start()


def _settle(cdc, topic=TOPIC, quiet=1.0):
    """Wait until no new event arrived for ``quiet`` seconds; return the events."""
    last, since = -1, time.monotonic()
    while time.monotonic() - since < quiet:
        n = len(cdc.events(topic))
        if n != last:
            last, since = n, time.monotonic()
        time.sleep(0.1)
    return cdc.events(topic)


def test_initial_only_snapshots_then_exits_and_never_again(pg_server, pg_db, tmp_path):
    _setup(pg_server, pg_db)
    cdc = _start(pg_server, pg_db, tmp_path, **{"snapshot.mode": "initial_only"})
    assert cdc.wait_exit(60) == 0, cdc.log()
    assert _ops(cdc.events(TOPIC)) == ["r", "r", "r"]
    pg_server.execute("INSERT INTO t VALUES (4, 'v4')", dbname=pg_db)
    cdc = _start(pg_server, pg_db, tmp_path, **{"snapshot.mode": "initial_only"})
    assert cdc.wait_exit(60) == 0
    assert _ops(cdc.events(TOPIC)) == ["r", "r", "r"], "initial_only snapshotted or streamed a second time"


@pytest.mark.parametrize("mode", ["no_data", "never"])
def test_no_data_streams_without_snapshot(pg_server, pg_db, tmp_path, mode):
    _setup(pg_server, pg_db)
    cdc = _start(pg_server, pg_db, tmp_path, **{"snapshot.mode": mode})
    try:
        cdc.wait_until(lambda: (tmp_path / "offsets.json").exists(), what="the slot")
        pg_server.execute("INSERT INTO t VALUES (4, 'v4')", dbname=pg_db)
        events = cdc.wait_events(TOPIC, 1)
    finally:
        assert cdc.terminate() == 0
    assert _ops(events) == ["c"] and events[0]["key"]["payload"] == {"id": 4}


def test_always_snapshots_on_every_start(pg_server, pg_db, tmp_path):
    _setup(pg_server, pg_db)
    cdc = _start(pg_server, pg_db, tmp_path, **{"snapshot.mode": "always"})
    cdc.wait_events(TOPIC, 3)
    assert cdc.terminate() == 0
    pg_server.execute("UPDATE t SET v = 'changed' WHERE id = 2", dbname=pg_db)
    cdc = _start(pg_server, pg_db, tmp_path, **{"snapshot.mode": "always"})
    try:
        events = cdc.wait_events(TOPIC, 6)
    finally:
        assert cdc.terminate() == 0
    assert _ops(events) == ["r"] * 6
    assert {"id": 2, "v": "changed"} in [e["value"]["payload"]["after"] for e in events[3:]]


def test_initial_restart_streams_from_offset_without_new_snapshot(pg_server, pg_db, tmp_path):
    _setup(pg_server, pg_db)
    cdc = _start(pg_server, pg_db, tmp_path)
    cdc.wait_events(TOPIC, 3)
    assert cdc.terminate() == 0
    pg_server.execute("INSERT INTO t VALUES (4, 'v4')", dbname=pg_db)
    cdc = _start(pg_server, pg_db, tmp_path)
    try:
        cdc.wait_events(TOPIC, 4)
        events = _settle(cdc)
    finally:
        assert cdc.terminate() == 0
    assert _ops(events) == ["r", "r", "r", "c"]


def test_lost_slot_fails_loudly_unless_when_needed(pg_server, pg_db, tmp_path):
    _setup(pg_server, pg_db)
    cdc = _start(pg_server, pg_db, tmp_path)
    cdc.wait_events(TOPIC, 3)
    assert cdc.terminate() == 0
    pg_server.execute("SELECT pg_drop_replication_slot('debezium')", dbname=pg_db)
    cdc = _start(pg_server, pg_db, tmp_path)
    assert cdc.wait_exit(60) == 1
    assert "replication slot 'debezium' does not exist" in cdc.log() and "when_needed" in cdc.log()
    cdc = _start(pg_server, pg_db, tmp_path, **{"snapshot.mode": "when_needed"})
    try:
        events = cdc.wait_events(TOPIC, 6)
    finally:
        assert cdc.terminate() == 0
    assert _ops(events) == ["r"] * 6


def test_primary_key_update_is_delete_tombstone_create(pg_server, pg_db, tmp_path):
    _setup(pg_server, pg_db, rows=1)
    cdc = _start(pg_server, pg_db, tmp_path)
    try:
        cdc.wait_events(TOPIC, 1)
        pg_server.execute("UPDATE t SET id = 10 WHERE id = 1", dbname=pg_db)
        events = cdc.wait_events(TOPIC, 4)
    finally:
        assert cdc.terminate() == 0
    delete, tombstone, create = events[1:]
    assert _ops(events[1:]) == ["d", None, "c"]
    assert delete["key"]["payload"] == {"id": 1} and tombstone["key"]["payload"] == {"id": 1}
    assert create["key"]["payload"] == {"id": 10}
    assert delete["value"]["payload"]["before"]["id"] == 1
    assert create["value"]["payload"]["after"] == {"id": 10, "v": "v1"}
    # As Debezium Server's default header converter writes them: the key schema with the other key.
    assert delete["headers"] == tombstone["headers"] == {"__debezium.newkey": {"schema": create["key"]["schema"],
                                                                               "payload": {"id": 10}}}
    assert create["headers"] == {"__debezium.oldkey": {"schema": delete["key"]["schema"], "payload": {"id": 1}}}


@pytest.mark.parametrize(
    "identity, update_before, delete_before",
    [
        ("DEFAULT", None, {"id": 1, "v": ""}),
        ("FULL", {"id": 1, "v": "v1"}, {"id": 1, "v": "changed"}),
    ],
)
def test_replica_identity_shapes_before(pg_server, pg_db, tmp_path, identity, update_before, delete_before):
    _setup(pg_server, pg_db, rows=1)
    pg_server.execute(f"ALTER TABLE t REPLICA IDENTITY {identity}", dbname=pg_db)
    cdc = _start(pg_server, pg_db, tmp_path)
    try:
        cdc.wait_events(TOPIC, 1)
        pg_server.execute("UPDATE t SET v = 'changed' WHERE id = 1", dbname=pg_db)
        pg_server.execute("DELETE FROM t WHERE id = 1", dbname=pg_db)
        events = cdc.wait_events(TOPIC, 4)
    finally:
        assert cdc.terminate() == 0
    assert _ops(events) == ["r", "u", "d", None]
    assert events[1]["value"]["payload"]["before"] == update_before
    assert events[2]["value"]["payload"]["before"] == delete_before


def test_tombstones_can_be_turned_off(pg_server, pg_db, tmp_path):
    _setup(pg_server, pg_db, rows=1)
    cdc = _start(pg_server, pg_db, tmp_path, **{"tombstones.on.delete": "false"})
    try:
        cdc.wait_events(TOPIC, 1)
        pg_server.execute("DELETE FROM t WHERE id = 1", dbname=pg_db)
        cdc.wait_events(TOPIC, 2)
        events = _settle(cdc)
    finally:
        assert cdc.terminate() == 0
    assert _ops(events) == ["r", "d"]


def test_filters_and_schemas_off(pg_server, pg_db, tmp_path):
    _setup(pg_server, pg_db, rows=2)
    pg_server.execute("CREATE TABLE other (id int PRIMARY KEY, secret text)", dbname=pg_db)
    pg_server.execute("INSERT INTO other VALUES (1, 'x')", dbname=pg_db)
    props = server_properties(pg_server, pg_db, tmp_path, **{
        "table.include.list": "public.t", "column.exclude.list": "public.t.v"})
    props["debezium.format.value.schemas.enable"] = "false"
    props["debezium.format.key.schemas.enable"] = "false"
    cdc = CdcProcess(write_properties(tmp_path / "app.properties", props), tmp_path).start()
    try:
        cdc.wait_events(TOPIC, 2)
        pg_server.execute("INSERT INTO other VALUES (2, 'y'); INSERT INTO t VALUES (3, 'z')", dbname=pg_db)
        events = cdc.wait_events(TOPIC, 3)
    finally:
        assert cdc.terminate() == 0
    assert not (tmp_path / "events" / "dbserver1.public.other.jsonl").exists()
    assert events[2]["key"] == {"id": 3}
    assert events[2]["value"]["after"] == {"id": 3} and events[2]["value"]["op"] == "c"
