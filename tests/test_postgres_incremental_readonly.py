"""Read-only incremental snapshots (``read.only=true``) on a real PostgreSQL: snapshot/WAL watermarks, nothing written.

The connector's user may only read and replicate (no INSERT on any table); signals come through
``engine.signal``, the file channel, ``cdc signal``, or an application's row in the signal table.
Under concurrent updates, inserts and deletes the replayed events equal the final table and no key
goes back to an older value; an idle database completes the snapshot without a transaction id
being assigned; kill -9 mid-snapshot resumes after the last closed chunk.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from contextlib import contextmanager

import orjson

from cdc_postgres.readonly import (
    EventPosition, PgSnapshot, Watermark, after, caught_up, normalize_lsn, read_only_problem,
)
from cdc_process import CdcProcess, run_cli, server_properties, write_properties
from incremental_replay import replay
from test_postgres_incremental_snapshot import Run

ROWS = 20000
SIGNAL_TABLE = "CREATE TABLE debezium_signal (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))"


def _read_only_user(pg, db: str) -> str:
    """A role that can log in, replicate and SELECT, but write no table; the publication made for it by a superuser."""
    user = f"ro_{uuid.uuid4().hex[:8]}"
    pg.execute(f'CREATE ROLE "{user}" LOGIN REPLICATION')
    pg.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA public TO "{user}"', dbname=db)
    pg.execute("CREATE PUBLICATION dbz_publication FOR ALL TABLES", dbname=db)
    writable = pg.execute("SELECT count(*) FROM pg_tables t WHERE schemaname = 'public' AND "
                          "(has_table_privilege(%s, format('%%I.%%I', schemaname, tablename), 'INSERT') OR "
                          "has_table_privilege(%s, format('%%I.%%I', schemaname, tablename), 'UPDATE'))",
                          dbname=db, params=(user, user))[0][0]
    assert writable == 0
    return user


def _config(pg, db: str, user: str, **extra) -> dict:
    return {"connector.class": "postgres", "database.hostname": pg.host, "database.port": pg.port,
            "database.user": user, "database.dbname": db, "topic.prefix": "ro", "poll.interval.ms": 50,
            "snapshot.mode": "no_data", "read.only": "true", "table.include.list": "public.items,public.marker",
            "slot.drop.on.stop": "true", **extra}


def _xid_horizon(pg, db: str) -> int:
    """One past the newest finished transaction id (grows whenever a session that wrote ends)."""
    return int(pg.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint", dbname=db)[0][0])


@contextmanager
def _autovacuum_paused(pg):
    """Autovacuum off on the whole (shared) server, and no worker running: its ANALYZE writes and takes an xid.

    The server's transaction counter is cluster-wide: an auto-analyze of another test's database
    would otherwise look like a write by the connector (seen once in CI: the horizon moved by one).
    """
    pg.execute("ALTER SYSTEM SET autovacuum = off")
    pg.execute("SELECT pg_reload_conf()")
    try:
        deadline = time.monotonic() + 60
        while pg.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'")[0][0]:
            assert time.monotonic() < deadline, "an autovacuum worker still runs a minute after autovacuum was turned off"
            time.sleep(0.1)
        yield
    finally:
        pg.execute("ALTER SYSTEM RESET autovacuum")
        pg.execute("SELECT pg_reload_conf()")


def test_read_only_snapshot_under_concurrent_writes_replays_to_the_final_state(pg_server, pg_db):
    """Updates, inserts and deletes while a read-only snapshot runs: replay == table, no key goes back, no writes."""
    pg_server.execute(SIGNAL_TABLE, dbname=pg_db)
    pg_server.execute("CREATE TABLE marker (id int PRIMARY KEY)", dbname=pg_db)
    pg_server.execute("CREATE TABLE items (id int PRIMARY KEY, v int NOT NULL, pad text)", dbname=pg_db)
    # Even keys to start with; inserts take odd keys (never reused), so they land inside chunks too.
    pg_server.execute(f"INSERT INTO items SELECT 2 * g, 0, 'x' FROM generate_series(1, {ROWS}) g", dbname=pg_db)
    user = _read_only_user(pg_server, pg_db)
    config = _config(pg_server, pg_db, user, **{"signal.data.collection": "public.debezium_signal",
                                                "incremental.snapshot.chunk.size": 200})
    stop = threading.Event()
    counts = {"u": 0, "c": 0, "d": 0}
    used: set[int] = set()
    lock = threading.Lock()

    with Run(config) as run:
        def writer(seed: int) -> None:
            rnd = random.Random(seed)
            with pg_server.connect(pg_db) as conn:
                conn.autocommit = True
                while not stop.is_set():
                    # Aim at the chunks being read now (just ahead of the last emitted one) and anywhere.
                    ahead = run.engine.metrics.snapshot.chunk_to
                    base = int(ahead) if str(ahead).isdigit() else 0
                    key = 2 * rnd.randint(1, ROWS) if rnd.random() < 0.3 else min(2 * ROWS, base + 2 * rnd.randint(1, 300))
                    op = rnd.random()
                    with conn.transaction():
                        if op < 0.6:
                            conn.execute("UPDATE items SET v = v + 1 WHERE id = %s", (key,))
                            kind = "u"
                        elif op < 0.8:
                            odd = (base | 1) + 2 * rnd.randint(1, 300)
                            with lock:
                                if odd in used:
                                    continue
                                used.add(odd)
                            conn.execute("INSERT INTO items VALUES (%s, 0, 'new')", (odd,))
                            kind = "c"
                        else:
                            conn.execute("DELETE FROM items WHERE id = %s", (key,))
                            kind = "d"
                    with lock:
                        counts[kind] += 1

        def long_writer() -> None:
            """Transactions of several updates spread over time: running across chunk reads, committing later."""
            rnd = random.Random(99)
            with pg_server.connect(pg_db) as conn:
                conn.autocommit = True
                while not stop.is_set():
                    ahead = run.engine.metrics.snapshot.chunk_to
                    base = int(ahead) if str(ahead).isdigit() else 0
                    with conn.transaction():
                        for _ in range(3):
                            key = min(2 * ROWS, base + 2 * rnd.randint(1, 300))
                            conn.execute("UPDATE items SET v = v + 1 WHERE id = %s", (key,))
                            time.sleep(0.01)
                    with lock:
                        counts["u"] += 3

        writers = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
        writers.append(threading.Thread(target=long_writer))
        for w in writers:
            w.start()
        try:
            time.sleep(0.3)
            run.engine.signal("execute-snapshot", {"data-collections": ["public.items"]}, "ro-1")
            run.wait(lambda: "COMPLETED" in run.note_types(), "the read-only incremental snapshot", 120)
        finally:
            stop.set()
            for w in writers:
                w.join()
        pg_server.execute("INSERT INTO marker VALUES (1)", dbname=pg_db)
        run.wait(lambda: any(r.value and r.value["after"]["id"] == 1 for r in run.topic("ro.public.marker")),
                 "the marker")
        events = run.topic("ro.public.items")
        notes = list(run.notes)

    assert counts["u"] > 200 and counts["d"] > 50, counts
    replayed, reads = replay(events)
    final = {row[0]: row[1] for row in pg_server.execute("SELECT id, v FROM items", dbname=pg_db)}
    assert replayed == final
    assert reads >= ROWS - counts["d"] - 2000, reads  # (rows changed inside their window are streamed instead)
    # Nothing was written: the signal table is empty and never had a row inserted.
    assert pg_server.execute("SELECT count(*) FROM debezium_signal", dbname=pg_db)[0][0] == 0
    assert pg_server.execute("SELECT n_tup_ins FROM pg_stat_user_tables WHERE relname = 'debezium_signal'",
                             dbname=pg_db)[0][0] == 0
    assert not [n for n in notes if n.type in ("REJECTED", "ABORTED")]
    scans = [n.additional_data for n in notes if n.type == "TABLE_SCAN_COMPLETED"]
    assert [s["status"] for s in scans] == ["SUCCEEDED"], scans


def test_read_only_snapshot_of_an_idle_database_completes_without_writing(pg_server, pg_db, tmp_path):
    """No signal table, a file signal, nothing else happening: every row READ once, no transaction id assigned."""
    pg_server.execute("CREATE TABLE items (id int PRIMARY KEY, v int NOT NULL) WITH (autovacuum_enabled = false)",
                      dbname=pg_db)
    pg_server.execute(f"INSERT INTO items SELECT g, g FROM generate_series(1, {ROWS}) g", dbname=pg_db)
    pg_server.execute("VACUUM ANALYZE items", dbname=pg_db)
    user = _read_only_user(pg_server, pg_db)
    signals = tmp_path / "signals.jsonl"
    signals.write_text("")
    config = _config(pg_server, pg_db, user, **{
        "signal.enabled.channels": "file", "signal.file": str(signals), "signal.poll.interval.ms": 50,
        "table.include.list": "public.items", "incremental.snapshot.chunk.size": 500})
    with _autovacuum_paused(pg_server), Run(config) as run:
        before = _xid_horizon(pg_server, pg_db)
        signals.write_text(orjson.dumps({"id": "idle-1", "type": "execute-snapshot",
                                         "data": {"data-collections": ["public.items"]}}).decode() + "\n")
        run.wait(lambda: "COMPLETED" in run.note_types(), "the snapshot of an idle database", 120)
        # In-process listeners hear COMPLETED when the last window closes, before its READs reach the handler.
        run.wait(lambda: len(run.topic("ro.public.items")) >= ROWS, "the last window's READs")
        after_ = _xid_horizon(pg_server, pg_db)
        reads = [r.key["id"] for r in run.topic("ro.public.items") if r.value is not None]
    assert after_ == before, "a transaction id was assigned while the snapshot ran: something was written"
    assert sorted(reads) == list(range(1, ROWS + 1))
    assert run.note_types()[-1] == "COMPLETED"


def test_read_only_snapshot_requested_through_the_signal_table(pg_server, pg_db):
    """The source channel still works read-only: an application inserts the signal row, the connector only reads it."""
    pg_server.execute(SIGNAL_TABLE, dbname=pg_db)
    pg_server.execute("CREATE TABLE items (id int PRIMARY KEY, v int NOT NULL)", dbname=pg_db)
    pg_server.execute("INSERT INTO items SELECT g, g FROM generate_series(1, 3000) g", dbname=pg_db)
    user = _read_only_user(pg_server, pg_db)
    config = _config(pg_server, pg_db, user, **{"signal.data.collection": "public.debezium_signal",
                                                "table.include.list": "public.items",
                                                "incremental.snapshot.chunk.size": 256})
    with Run(config) as run:
        pg_server.execute("INSERT INTO debezium_signal VALUES ('src-1', 'execute-snapshot', "
                          "'{\"data-collections\": [\"public.items\"]}')", dbname=pg_db)
        run.wait(lambda: "COMPLETED" in run.note_types(), "the snapshot requested in the signal table")
        # In-process listeners hear COMPLETED when the last window closes, before its READs reach the handler.
        run.wait(lambda: len(run.topic("ro.public.items")) >= 3000, "the last window's READs")
        reads = [r.key["id"] for r in run.topic("ro.public.items") if r.value and r.value["op"] == "r"]
        ids = {n.id for n in run.notes if n.aggregate_type == "Incremental Snapshot"}
    assert sorted(reads) == list(range(1, 3001))
    assert ids == {"src-1"}
    assert [r[0] for r in pg_server.execute("SELECT id FROM debezium_signal", dbname=pg_db)] == ["src-1"]


def test_kill_9_mid_read_only_snapshot_resumes_from_the_last_chunk(pg_server, pg_db, tmp_path):
    """``cdc signal`` into ``cdc run`` with read.only=true, kill -9 mid-snapshot; the restart goes on after the last
    committed chunk and does not run the signal again."""
    total = 60000
    pg_server.execute("CREATE TABLE items (id int PRIMARY KEY, v text)", dbname=pg_db)
    pg_server.execute(f"INSERT INTO items SELECT g, 'v' || g FROM generate_series(1, {total}) g", dbname=pg_db)
    user = _read_only_user(pg_server, pg_db)
    signal_file = tmp_path / "signals.jsonl"
    props = server_properties(pg_server, pg_db, tmp_path, **{
        "database.user": user, "read.only": "true", "snapshot.mode": "no_data", "table.include.list": "public.items",
        "signal.enabled.channels": "file", "signal.file": str(signal_file), "signal.poll.interval.ms": 50,
        "incremental.snapshot.chunk.size": 250, "notification.enabled.channels": "sink,log",
        "notification.sink.topic.name": "notes", "max.batch.size": 512})
    config = write_properties(tmp_path / "app.properties", props)
    topic = "dbserver1.public.items"

    def reads(cdc: CdcProcess) -> int:
        path = cdc.events_dir / f"{topic}.jsonl"
        return path.read_bytes().count(b'"op":"r"') if path.exists() else 0

    cdc = CdcProcess(config, tmp_path).start()
    cdc.wait_until(lambda: (tmp_path / "offsets.json").exists(), what="streaming to start")
    sent = run_cli("signal", str(config), "execute-snapshot", '{"data-collections": ["public.items"]}',
                   "--id", "ro-kill")
    assert sent.returncode == 0, sent.stderr
    cdc.wait_until(lambda: reads(cdc) >= 10000, 60, "10000 READs")
    cdc.kill()
    first_run = cdc.events(topic)
    offsets = orjson.loads((tmp_path / "offsets.json").read_bytes())["offsets"][0]["offset"]
    state = offsets["incremental_snapshot"]
    assert state["id"] == "ro-kill"
    [table] = state["tables"]
    assert table["table"] == "public.items" and table["key"] == ["id"] and table["max"] == [str(total)]
    committed = int(table["last"][0])
    assert 0 < committed < total, "kill -9 came too late: the snapshot had finished"

    cdc2 = CdcProcess(config, tmp_path).start()
    try:
        cdc2.wait_until(lambda: any(e["value"]["payload"]["type"] == "COMPLETED" and e["value"]["payload"]["aggregate_type"] == "Incremental Snapshot"
                                            for e in cdc2.events("notes")),
                        120, "the snapshot to complete")
    finally:
        assert cdc2.terminate() == 0, cdc2.log()
    second_run = cdc2.events(topic)[len(first_run):]
    second_ids = [e["key"]["payload"]["id"] for e in second_run if e["value"]["payload"]["op"] == "r"]
    assert min(second_ids) == committed + 1, "the restart did not resume after the last committed chunk"
    first_ids = {e["key"]["payload"]["id"] for e in first_run}
    assert first_ids | set(second_ids) == set(range(1, total + 1))
    assert len(second_ids) == total - committed
    notes = [e["value"]["payload"] for e in cdc2.events("notes")]
    assert [n["type"] for n in notes if n["aggregate_type"] == "Incremental Snapshot"].count("STARTED") == 1, \
        "the file signal ran again after the restart"


def test_read_only_needs_postgresql_13():
    """Before PostgreSQL 13 (no pg_current_snapshot) read.only=true is refused naming the property."""
    problem = read_only_problem(120011, "postgres at db:5432")
    assert problem is not None and problem.startswith("read.only:")
    assert "PostgreSQL 13 or later" in problem and "postgres at db:5432 runs PostgreSQL 12" in problem
    assert "9.6" in (read_only_problem(90624, "x") or "")
    assert read_only_problem(130000, "x") is None and read_only_problem(170002, "x") is None


def test_read_only_refused_on_an_old_server_at_start(pg_server, pg_db, monkeypatch):
    """The connector stops at start with the error naming read.only when the server is too old."""
    import pytest

    from cdc_core.engine import Engine
    from cdc_core.stores.memory_offsets import MemoryOffsetStore
    from cdc_postgres import readonly

    monkeypatch.setattr(readonly, "MIN_VERSION", 10 ** 9)  # every real server counts as too old
    engine = Engine(_config(pg_server, pg_db, pg_server.user, **{"table.include.list": None}),
                    offset_store=MemoryOffsetStore())
    with pytest.raises(Exception, match="read.only: read-only incremental snapshots use pg_current_snapshot"):
        engine.run(lambda records: None)


def test_snapshot_and_wal_watermarks():
    """Containment of events and checkpoints: the read's snapshot and position (low), WAL positions (high)."""
    snap = PgSnapshot.parse("100:110:102,105")
    assert snap.visible(99) and snap.visible(101) and not snap.visible(102) and not snap.visible(110)
    assert str(snap) == "100:110:102,105" and snap.in_progress() == {102, 105}
    # The read's own watermark: a commit at or past its position, or one its snapshot did not see, is later.
    low = Watermark(5000, snap, read=True)
    assert not after(low, EventPosition(101, 4000))
    assert after(low, EventPosition(102, 4000)), "committed before the read's position but not yet visible to it"
    assert after(low, EventPosition(111, 5000))
    # Positions around the read compare WAL positions only: the window closes at the first commit past it.
    high = Watermark(6000, PgSnapshot.parse("111:111:"))
    assert not after(high, EventPosition(120, 5999)) and after(high, EventPosition(108, 6000))
    assert caught_up(high, {"lsn_commit": 6000, "lsn_proc": None}) and not caught_up(high, {"lsn_commit": 5999})
    assert not caught_up(high, {"lsn_commit": None})
    # Full xids across an epoch: 32-bit stream xids taken in the epoch nearest the snapshot.
    epoch = 1 << 32
    wrapped = PgSnapshot(epoch - 10, epoch + 5, frozenset({epoch + 2}))
    assert wrapped.full_xid(3) == epoch + 3 and wrapped.full_xid(0xFFFFFFF0) == epoch - 16
    assert wrapped.visible(0xFFFFFFF0) and not wrapped.visible(2) and wrapped.visible(3) and not wrapped.visible(5)
    # Just past a page header is the page boundary (where the walsender reports the stream to be).
    assert normalize_lsn(3 * 8192 + 24, 8192) == 3 * 8192 and normalize_lsn(3 * 8192 + 48, 8192) == 3 * 8192 + 48
