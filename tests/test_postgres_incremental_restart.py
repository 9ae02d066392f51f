"""``cdc signal`` into a running ``cdc run``, kill -9 in the middle of an incremental snapshot, and a restart
that resumes after the last chunk it committed (not from the start), without running the signal again."""

from __future__ import annotations

import orjson

from cdc_process import CdcProcess, run_cli, server_properties, write_properties


def _reads(cdc: CdcProcess) -> int:
    path = cdc.events_dir / "dbserver1.public.items.jsonl"
    return path.read_bytes().count(b'"op":"r"') if path.exists() else 0


def test_kill_9_mid_snapshot_resumes_from_the_last_chunk(pg_server, pg_db, tmp_path):
    pg_server.execute("CREATE TABLE debezium_signal (id varchar(64) PRIMARY KEY, type varchar(32), data text)",
                      dbname=pg_db)
    pg_server.execute("CREATE TABLE items (id int PRIMARY KEY, v text)", dbname=pg_db)
    pg_server.execute("INSERT INTO items SELECT g, 'v' || g FROM generate_series(1, 60000) g", dbname=pg_db)
    signal_file = tmp_path / "signals.jsonl"
    props = server_properties(pg_server, pg_db, tmp_path, **{
        "snapshot.mode": "no_data", "table.include.list": "public.items",
        "signal.data.collection": "public.debezium_signal", "signal.enabled.channels": "source,file",
        "signal.file": str(signal_file), "signal.poll.interval.ms": 50, "incremental.snapshot.chunk.size": 250,
        "notification.enabled.channels": "sink,log", "notification.sink.topic.name": "notes", "max.batch.size": 512})
    config = write_properties(tmp_path / "app.properties", props)
    cdc = CdcProcess(config, tmp_path).start()
    cdc.wait_until(lambda: (tmp_path / "offsets.json").exists(), what="streaming to start")
    sent = run_cli("signal", str(config), "execute-snapshot", '{"data-collections": ["public.items"]}', "--id", "ad-hoc-1")
    assert sent.returncode == 0, sent.stderr
    assert "ad-hoc-1" in sent.stdout and str(signal_file) in sent.stdout
    cdc.wait_until(lambda: _reads(cdc) >= 10000, 60, "10000 READs")
    cdc.kill()
    first_run = cdc.events("dbserver1.public.items")
    offsets = orjson.loads((tmp_path / "offsets.json").read_bytes())["offsets"][0]["offset"]
    state = offsets["incremental_snapshot"]
    assert state["id"] == "ad-hoc-1"
    [table] = state["tables"]
    assert table["table"] == "public.items" and table["key"] == ["id"] and table["max"] == ["60000"]
    committed = int(table["last"][0])
    assert 0 < committed < 60000

    cdc2 = CdcProcess(config, tmp_path).start()
    try:
        cdc2.wait_until(lambda: any(e["value"]["payload"]["type"] == "COMPLETED" and e["value"]["payload"]["aggregate_type"] == "Incremental Snapshot"
                                            for e in cdc2.events("notes")),
                        60, "the snapshot to complete")
    finally:
        assert cdc2.terminate() == 0, cdc2.log()
    second_run = cdc2.events("dbserver1.public.items")[len(first_run):]
    second_ids = [e["key"]["payload"]["id"] for e in second_run if e["value"]["payload"]["op"] == "r"]
    assert min(second_ids) == committed + 1, "the restart did not resume after the last committed chunk"
    first_ids = {e["key"]["payload"]["id"] for e in first_run}
    assert first_ids | set(second_ids) == set(range(1, 60001))
    assert len(second_ids) == 60000 - committed
    notes = [e["value"]["payload"] for e in cdc2.events("notes")]
    assert [n["type"] for n in notes if n["aggregate_type"] == "Incremental Snapshot"].count("STARTED") == 1, \
        "the file signal ran again after the restart"
    # Besides each start's Initial Snapshot SKIPPED (no_data), every notification is the ad hoc snapshot's.
    assert [n["type"] for n in notes if n["aggregate_type"] == "Initial Snapshot"] == ["SKIPPED", "SKIPPED"]
    assert all(n["id"] == "ad-hoc-1" for n in notes if n["aggregate_type"] == "Incremental Snapshot")
