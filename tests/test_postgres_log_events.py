"""Truncate and logical-decoding-message events, REPLICA IDENTITY INDEX, slot.drop.on.stop, server restarts."""

from __future__ import annotations

import time

from cdc_process import CdcProcess, server_properties, write_properties

TOPIC = "dbserver1.public.t"


def _start(pg, db, tmp_path, **source):
    config = write_properties(tmp_path / "app.properties", server_properties(pg, db, tmp_path, **source))
    return CdcProcess(config, tmp_path).start()


def _ready(cdc, tmp_path):
    cdc.wait_until(lambda: (tmp_path / "offsets.json").exists(), what="the snapshot")
    cdc.wait_until(lambda: "streaming from slot" in cdc.log(), what="streaming")


def test_truncate_events_when_not_skipped(pg_server, pg_db, tmp_path):
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY); CREATE TABLE u (id int PRIMARY KEY)", dbname=pg_db)
    cdc = _start(pg_server, pg_db, tmp_path, **{"skipped.operations": "none"})
    try:
        _ready(cdc, tmp_path)
        pg_server.execute("INSERT INTO t VALUES (1); TRUNCATE t, u", dbname=pg_db)
        events = cdc.wait_events(TOPIC, 2)
        cdc.wait_events("dbserver1.public.u", 1)
    finally:
        assert cdc.terminate() == 0
    truncate = events[1]
    assert truncate["key"] is None
    payload = truncate["value"]["payload"]
    assert payload["op"] == "t" and payload["before"] is None and payload["after"] is None
    assert payload["source"]["table"] == "t" and payload["source"]["txId"] == events[0]["value"]["payload"]["source"]["txId"]  # one statement batch, one transaction


def test_truncate_is_skipped_by_default(pg_server, pg_db, tmp_path):
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname=pg_db)
    cdc = _start(pg_server, pg_db, tmp_path)
    try:
        _ready(cdc, tmp_path)
        pg_server.execute("TRUNCATE t; INSERT INTO t VALUES (1)", dbname=pg_db)
        events = cdc.wait_events(TOPIC, 1)
        time.sleep(0.5)
        events = cdc.events(TOPIC)
    finally:
        assert cdc.terminate() == 0
    assert [e["value"]["payload"]["op"] for e in events] == ["c"]


def test_logical_decoding_messages(pg_server, pg_db, tmp_path):
    """The message envelope as 2.7.4's PostgresSchemaFactory and LogicalDecodingMessageMonitor build it; a
    non-transactional message is its own commit (sequence) and keeps the last transaction's source time."""
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname=pg_db)
    cdc = _start(pg_server, pg_db, tmp_path, **{"message.prefix.exclude.list": "ignored", "binary.handling.mode": "hex"})
    try:
        _ready(cdc, tmp_path)
        pg_server.execute("SELECT pg_logical_emit_message(true, 'foo', 'bar')", dbname=pg_db)
        pg_server.execute("SELECT pg_logical_emit_message(false, 'ignored', 'x')", dbname=pg_db)
        pg_server.execute("SELECT pg_logical_emit_message(false, 'foo', 'baz')", dbname=pg_db)
        pg_server.execute("INSERT INTO t VALUES (1)", dbname=pg_db)
        events = cdc.wait_events("dbserver1.message", 2)
        insert, = cdc.wait_events(TOPIC, 1)
    finally:
        assert cdc.terminate() == 0
    tx, non_tx = events
    assert tx["key"]["payload"] == {"prefix": "foo"}
    assert tx["key"]["schema"] == {"type": "struct", "fields": [{"type": "string", "optional": True, "field": "prefix"}],
                                   "optional": False, "name": "io.debezium.connector.postgresql.MessageKey",
                                   "version": 1}
    schema = tx["value"]["schema"]
    assert (schema["name"], schema["version"], schema["optional"]) == ("io.debezium.connector.postgresql.MessageValue",
                                                                      1, False)
    assert [f["field"] for f in schema["fields"]] == ["op", "ts_ms", "source", "message"]
    assert schema["fields"][3] == {
        "type": "struct", "fields": [{"type": "string", "optional": True, "field": "prefix"},
                                     {"type": "string", "optional": True, "field": "content"}],
        "optional": False, "name": "io.debezium.connector.postgresql.Message", "version": 1, "field": "message"}
    assert list(tx["value"]["payload"]) == ["op", "ts_ms", "source", "message"]
    assert tx["value"]["payload"]["op"] == "m"
    assert tx["value"]["payload"]["message"] == {"prefix": "foo", "content": b"bar".hex()}
    source, non_tx_source = tx["value"]["payload"]["source"], non_tx["value"]["payload"]["source"]
    assert source["txId"] is not None
    assert source["schema"] == "" and source["table"] == ""
    assert non_tx_source["txId"] is None
    assert non_tx["value"]["payload"]["message"]["content"] == b"baz".hex()
    # pgoutput sends no commit time with a non-transactional message: the last transaction's stays.
    assert non_tx_source["ts_us"] == source["ts_us"]
    # A non-transactional message is a commit of its own, also when its prefix is filtered out.
    assert non_tx_source["sequence"] == f'["{non_tx_source["lsn"]}","{non_tx_source["lsn"]}"]'
    assert insert["value"]["payload"]["source"]["sequence"].startswith(f'["{non_tx_source["lsn"]}",')


def test_replica_identity_full_gives_unchanged_toasted_values_from_the_old_row(pg_server, pg_db, tmp_path):
    """The old row of REPLICA IDENTITY FULL carries a TOASTed value the new row leaves out: Debezium writes it
    (PostgresChangeRecordEmitter takes unchanged TOASTed values from the old tuple), not the placeholder."""
    body = "abcdefgh" * 1000
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY, body text, n int);"
                      "ALTER TABLE t ALTER COLUMN body SET STORAGE EXTERNAL; ALTER TABLE t REPLICA IDENTITY FULL;"
                      "CREATE TABLE d (id int PRIMARY KEY, body text, n int);"
                      "ALTER TABLE d ALTER COLUMN body SET STORAGE EXTERNAL", dbname=pg_db)
    cdc = _start(pg_server, pg_db, tmp_path)
    try:
        _ready(cdc, tmp_path)
        for table in ("t", "d"):
            pg_server.execute(f"INSERT INTO {table} VALUES (1, '{body}', 0)", dbname=pg_db)
            pg_server.execute(f"UPDATE {table} SET n = 1 WHERE id = 1", dbname=pg_db)
        full = cdc.wait_events(TOPIC, 2)[1]["value"]["payload"]
        default = cdc.wait_events("dbserver1.public.d", 2)[1]["value"]["payload"]
    finally:
        assert cdc.terminate() == 0
    assert full["before"] == {"id": 1, "body": body, "n": 0}
    assert full["after"] == {"id": 1, "body": body, "n": 1}
    # REPLICA IDENTITY DEFAULT sends no old row: the value is unavailable.
    assert default["before"] is None
    assert default["after"] == {"id": 1, "body": "__debezium_unavailable_value", "n": 1}


def test_replica_identity_index_gives_the_index_columns_in_before(pg_server, pg_db, tmp_path):
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY, code text NOT NULL, v text NOT NULL);"
                      "CREATE UNIQUE INDEX t_code ON t (code); ALTER TABLE t REPLICA IDENTITY USING INDEX t_code;"
                      "INSERT INTO t VALUES (1, 'a', 'x')", dbname=pg_db)
    cdc = _start(pg_server, pg_db, tmp_path)
    try:
        cdc.wait_events(TOPIC, 1)
        _ready(cdc, tmp_path)
        pg_server.execute("UPDATE t SET code = 'b' WHERE id = 1; DELETE FROM t", dbname=pg_db)
        events = cdc.wait_events(TOPIC, 4)
    finally:
        assert cdc.terminate() == 0
    update, delete = events[1]["value"]["payload"], events[2]["value"]["payload"]
    assert update["before"]["code"] == "a" and update["after"]["code"] == "b"
    assert delete["before"]["code"] == "b"


def test_slot_drop_on_stop(pg_server, pg_db, tmp_path):
    cdc = _start(pg_server, pg_db, tmp_path, **{"slot.drop.on.stop": "true", "slot.name": "dropme"})
    _ready(cdc, tmp_path)
    assert pg_server.execute("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'dropme'", dbname=pg_db)[0][0] == 1
    assert cdc.terminate() == 0
    # Dropped before cdc exits, although the server frees the slot only a moment after cdc's replication
    # connection closes (so no waiting here).
    assert pg_server.execute("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'dropme'", dbname=pg_db)[0][0] == 0
    assert "dropped slot dropme" in cdc.log(), cdc.log()


def test_server_restart_mid_stream_reconnects_and_loses_nothing(tmp_path):
    from cdc_postgres.embedded import EmbeddedPostgres

    with EmbeddedPostgres() as pg:
        pg.create_database("app")
        pg.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname="app")
        cdc = _start(pg, "app", tmp_path, **{"errors.retry.delay.initial.ms": 100, "errors.retry.delay.max.ms": 500})
        try:
            _ready(cdc, tmp_path)
            pg.execute("INSERT INTO t SELECT generate_series(1, 100)", dbname="app")
            cdc.wait_events(TOPIC, 100)
            pg.restart()
            pg.execute("INSERT INTO t SELECT generate_series(101, 200)", dbname="app")
            events = cdc.wait_events(TOPIC, 200, timeout=60)
        finally:
            assert cdc.terminate() == 0
    ids = [e["key"]["payload"]["id"] for e in events]
    assert sorted(set(ids)) == list(range(1, 201))
    assert "lost the connection to PostgreSQL" in cdc.log() and "retrying in" in cdc.log()
