"""Read-only incremental snapshots (``read.only=true``) on a real MariaDB: GTID watermarks, nothing written.

The connector's user may only read (SELECT, replication); signals come through ``engine.signal``,
the file channel or ``cdc signal``. Under concurrent updates, inserts and deletes the replayed
events equal the final table and no key goes back to an older value; an idle database completes
the snapshot with its binlog GTID position unchanged; kill -9 mid-snapshot resumes after the last
closed chunk.
"""

from __future__ import annotations

import random
import threading
import time
import uuid

import orjson

from cdc_mysql.readonly import MARIADB, MYSQL, read_only_problem
from cdc_process import CdcProcess, run_cli, write_properties
from incremental_replay import replay
from mariadb_cdc import EngineThread, connector_config, mariadb_properties

ROWS = 20000


def _read_only_user(server, database: str) -> tuple[str, str]:
    """A user that can read and replicate but write nothing; returns (user, password)."""
    user, password = f"ro_{uuid.uuid4().hex[:8]}", "ro-secret"
    server.execute([
        f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'",
        f"GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, BINLOG MONITOR ON *.* TO '{user}'@'%'",
    ])
    return user, password


def _gtid_seq(server) -> dict[int, int]:
    """``gtid_binlog_pos`` as domain -> last sequence number."""
    text = server.execute("SELECT @@global.gtid_binlog_pos")[0][0] or ""
    return {int(p.split("-")[0]): int(p.split("-")[2]) for p in text.split(",") if p}


def test_read_only_snapshot_under_concurrent_writes_replays_to_the_final_state(mariadb_server, mariadb_db):
    """Updates, inserts and deletes while a read-only snapshot runs: replay == table, no key goes back, no writes."""
    mariadb_server.execute([
        # A signal table the connector may read but not write (Debezium still reads signals from it).
        "CREATE TABLE debezium_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))",
        "CREATE TABLE marker (id INT PRIMARY KEY)",
        "CREATE TABLE items (id INT PRIMARY KEY, v INT NOT NULL, pad VARCHAR(10))",
        # Even keys to start with; inserts take odd keys (never reused), so they land inside chunks too.
        f"INSERT INTO items SELECT 2 * seq, 0, 'x' FROM seq_1_to_{ROWS}",
    ], database=mariadb_db)
    user, password = _read_only_user(mariadb_server, mariadb_db)
    config = connector_config(mariadb_server, mariadb_db, **{
        "database.user": user, "database.password": password, "read.only": "true",
        "snapshot.mode": "no_data", "signal.data.collection": f"{mariadb_db}.debezium_signal",
        "table.include.list": f"{mariadb_db}.items,{mariadb_db}.marker", "incremental.snapshot.chunk.size": 200,
        "topic.prefix": "ro"})
    engine = EngineThread(config)
    notes: list = []
    engine.engine.add_notification_listener(notes.append)
    stop = threading.Event()
    counts = {"u": 0, "c": 0, "d": 0, "logged": 0}
    used: set[int] = set()
    lock = threading.Lock()

    def writer(seed: int) -> None:
        rnd = random.Random(seed)
        with mariadb_server.connect(mariadb_db) as conn, conn.cursor() as cur:
            while not stop.is_set():
                ahead = engine.engine.metrics.snapshot.chunk_to
                base = int(ahead) if str(ahead).isdigit() else 0
                near = min(2 * ROWS, base + 2 * rnd.randint(1, 300))
                key = 2 * rnd.randint(1, ROWS) if rnd.random() < 0.3 else near
                op = rnd.random()
                if op < 0.6:
                    changed = cur.execute("UPDATE items SET v = v + 1 WHERE id = %s", (key,))
                    kind = "u"
                elif op < 0.8:
                    odd = (base | 1) + 2 * rnd.randint(1, 300)
                    with lock:
                        if odd in used:
                            continue
                        used.add(odd)
                    changed = cur.execute("INSERT INTO items VALUES (%s, 0, 'new')", (odd,))
                    kind = "c"
                else:
                    changed = cur.execute("DELETE FROM items WHERE id = %s", (key,))
                    kind = "d"
                with lock:
                    counts[kind] += 1
                    counts["logged"] += 1 if changed else 0  # a statement that changed no row logs nothing

    engine.start()
    writers = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    try:
        engine.wait(lambda rs: engine.engine.metrics.streaming.connected, "streaming")
        before = _gtid_seq(mariadb_server)
        for w in writers:
            w.start()
        time.sleep(0.2)
        engine.engine.signal("execute-snapshot", {"data-collections": [f"{mariadb_db}.items"]}, id="ro-1")
        engine.wait(lambda rs: any(n.type == "COMPLETED" and n.aggregate_type == "Incremental Snapshot" for n in notes), "the incremental snapshot", 120)
        stop.set()
        for w in writers:
            w.join()
        mariadb_server.execute("INSERT INTO marker VALUES (1)", database=mariadb_db)
        engine.wait(lambda rs: any(r.topic.endswith(".marker") for r in rs), "the marker")
        after = _gtid_seq(mariadb_server)
    finally:
        stop.set()
        for w in writers:
            if w.is_alive():
                w.join()
        engine.stop()
    assert counts["u"] > 200 and counts["d"] > 50, counts
    # Nothing but the test's own transactions reached the binlog: the connector wrote nothing.
    assert sum(after.values()) - sum(before.values()) == counts["logged"] + 1, (before, after, counts)
    assert mariadb_server.execute("SELECT COUNT(*) FROM debezium_signal", database=mariadb_db)[0][0] == 0
    replayed, reads = replay(r for r in engine.records if r.topic == f"ro.{mariadb_db}.items")
    final = {row[0]: row[1] for row in mariadb_server.execute("SELECT id, v FROM items", database=mariadb_db)}
    assert replayed == final
    assert reads >= ROWS - counts["d"] - 2000, reads
    assert not any(n.type == "REJECTED" for n in notes)


def test_read_only_snapshot_of_an_idle_database_completes_without_writing(mariadb_server, mariadb_db, tmp_path):
    """No signal table, a file signal, nothing else happening: every row READ once, the GTID position unchanged."""
    mariadb_server.execute([
        "CREATE TABLE items (id INT PRIMARY KEY, v INT NOT NULL)",
        f"INSERT INTO items SELECT seq, seq FROM seq_1_to_{ROWS}",
    ], database=mariadb_db)
    user, password = _read_only_user(mariadb_server, mariadb_db)
    signals = tmp_path / "signals.jsonl"
    signals.write_text("")
    config = connector_config(mariadb_server, mariadb_db, **{
        "database.user": user, "database.password": password, "read.only": "true", "snapshot.mode": "no_data",
        "signal.enabled.channels": "file", "signal.file": str(signals), "signal.poll.interval.ms": 50,
        "table.include.list": f"{mariadb_db}.items", "incremental.snapshot.chunk.size": 500, "topic.prefix": "idle"})
    engine = EngineThread(config)
    notes: list = []
    engine.engine.add_notification_listener(notes.append)
    engine.start()
    try:
        engine.wait(lambda rs: engine.engine.metrics.streaming.connected, "streaming")
        before = mariadb_server.execute("SELECT @@global.gtid_binlog_pos")[0][0]
        signals.write_text(orjson.dumps({"id": "idle-1", "type": "execute-snapshot",
                                         "data": {"data-collections": [f"{mariadb_db}.items"]}}).decode() + "\n")
        engine.wait(lambda rs: any(n.type == "COMPLETED" and n.aggregate_type == "Incremental Snapshot" for n in notes), "the snapshot of an idle database", 120)
        # In-process listeners hear COMPLETED when the last window closes, before its READs reach the handler.
        engine.wait(lambda rs: sum(r.topic == f"idle.{mariadb_db}.items" for r in rs) >= ROWS, "the last window's READs")
        after = mariadb_server.execute("SELECT @@global.gtid_binlog_pos")[0][0]
    finally:
        engine.stop()
    assert after == before, "the connector wrote to the database"
    reads = [r.key["id"] for r in engine.records if r.topic == f"idle.{mariadb_db}.items" and r.value is not None]
    assert sorted(reads) == list(range(1, ROWS + 1))
    assert [n.type for n in notes if n.aggregate_type == "Incremental Snapshot"][-1] == "COMPLETED"


def test_read_only_snapshot_requested_through_the_signal_table(mariadb_server, mariadb_db):
    """The source channel still works read-only: an application inserts the signal row, the connector only reads it."""
    mariadb_server.execute([
        "CREATE TABLE debezium_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))",
        "CREATE TABLE items (id INT PRIMARY KEY, v INT NOT NULL)",
        "INSERT INTO items SELECT seq, seq FROM seq_1_to_3000",
    ], database=mariadb_db)
    user, password = _read_only_user(mariadb_server, mariadb_db)
    config = connector_config(mariadb_server, mariadb_db, **{
        "database.user": user, "database.password": password, "read.only": "true", "snapshot.mode": "no_data",
        "signal.data.collection": f"{mariadb_db}.debezium_signal", "table.include.list": f"{mariadb_db}.items",
        "incremental.snapshot.chunk.size": 256, "topic.prefix": "src"})
    engine = EngineThread(config)
    notes: list = []
    engine.engine.add_notification_listener(notes.append)
    engine.start()
    try:
        engine.wait(lambda rs: engine.engine.metrics.streaming.connected, "streaming")
        mariadb_server.execute("INSERT INTO debezium_signal VALUES ('src-1', 'execute-snapshot', "
                               f"'{{\"data-collections\": [\"{mariadb_db}.items\"]}}')", database=mariadb_db)
        signalled = _gtid_seq(mariadb_server)
        engine.wait(lambda rs: any(n.type == "COMPLETED" and n.aggregate_type == "Incremental Snapshot" for n in notes), "the snapshot requested in the signal table")
        engine.wait(lambda rs: sum(r.topic == f"src.{mariadb_db}.items" for r in rs) >= 3000, "the last window's READs")
        assert _gtid_seq(mariadb_server) == signalled, "the connector wrote to the database"
    finally:
        engine.stop()
    reads = [r.key["id"] for r in engine.records if r.topic == f"src.{mariadb_db}.items" and r.value is not None]
    assert sorted(reads) == list(range(1, 3001))
    assert {n.id for n in notes if n.aggregate_type == "Incremental Snapshot"} == {"src-1"}
    rows = mariadb_server.execute("SELECT id FROM debezium_signal", database=mariadb_db)
    assert [tuple(r) for r in rows] == [("src-1",)]


def test_kill_9_mid_read_only_snapshot_resumes_from_the_last_chunk(mariadb_server, mariadb_db, tmp_path):
    """``cdc signal`` into ``cdc run`` with read.only=true, kill -9 mid-snapshot; the restart goes on after the last
    committed chunk and does not run the signal again."""
    total = 100_000
    mariadb_server.execute([
        "CREATE TABLE items (id INT PRIMARY KEY, v VARCHAR(20))",
        f"INSERT INTO items SELECT seq, CONCAT('v', seq) FROM seq_1_to_{total}",
    ], database=mariadb_db)
    user, password = _read_only_user(mariadb_server, mariadb_db)
    signal_file = tmp_path / "signals.jsonl"
    props = mariadb_properties(mariadb_server, mariadb_db, tmp_path, **{
        "database.user": user, "database.password": password, "read.only": "true", "snapshot.mode": "no_data",
        "table.include.list": f"{mariadb_db}.items", "signal.enabled.channels": "file",
        "signal.file": str(signal_file), "signal.poll.interval.ms": 50, "incremental.snapshot.chunk.size": 200,
        "notification.enabled.channels": "sink,log", "notification.sink.topic.name": "notes",
        "max.batch.size": 512})
    config = write_properties(tmp_path / "app.properties", props)
    topic = f"dbserver1.{mariadb_db}.items"

    def reads(cdc: CdcProcess) -> int:
        path = cdc.events_dir / f"{topic}.jsonl"
        return path.read_bytes().count(b'"op":"r"') if path.exists() else 0

    cdc = CdcProcess(config, tmp_path).start()
    cdc.wait_until(lambda: (tmp_path / "offsets.json").exists(), what="streaming to start")
    before = mariadb_server.execute("SELECT @@global.gtid_binlog_pos")[0][0]
    sent = run_cli("signal", str(config), "execute-snapshot", f'{{"data-collections": ["{mariadb_db}.items"]}}',
                   "--id", "ro-kill")
    assert sent.returncode == 0, sent.stderr
    cdc.wait_until(lambda: reads(cdc) >= 5000, 60, "5000 READs")
    cdc.kill()
    first_run = cdc.events(topic)
    offsets = orjson.loads((tmp_path / "offsets.json").read_bytes())["offsets"][0]["offset"]
    state = offsets["incremental_snapshot"]
    assert state["id"] == "ro-kill"
    [table] = state["tables"]
    assert table["table"] == f"{mariadb_db}.items" and table["key"] == ["id"]
    assert [str(v) for v in table["max"]] == [str(total)]
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
    assert mariadb_server.execute("SELECT @@global.gtid_binlog_pos")[0][0] == before, "the connector wrote"


def test_read_only_needs_gtids_on_mysql():
    """MySQL with gtid_mode OFF is refused naming read.only; MariaDB always has GTIDs."""
    off = {"gtid_mode": "OFF"}.get
    problem = read_only_problem(MYSQL, off, "mysql at db:3306")
    assert problem is not None and problem.startswith("read.only:")
    assert "gtid_mode is OFF on mysql at db:3306" in problem
    assert read_only_problem(MYSQL, {"gtid_mode": "ON"}.get, "mysql at db:3306") is None
    replica = {"gtid_mode": "ON", "replica_parallel_workers": "4", "replica_preserve_commit_order": "OFF"}.get
    assert "replica_preserve_commit_order=ON" in (read_only_problem(MYSQL, replica, "mysql at db:3306") or "")
    assert read_only_problem(MARIADB, {}.get, "mariadb at db:3306") is None


def test_gtid_watermarks_in_both_formats():
    """Containment of events and checkpoints against watermarks: MySQL uuid intervals, MariaDB per-domain seqs."""
    from cdc_mysql.gtid import gtid_set
    from cdc_mysql.readonly import EventPosition, GtidWatermark, StreamPositions, after

    uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    high = GtidWatermark(gtid_set("mysql", f"{uuid}:1-20"))
    assert not after(high, EventPosition(f"{uuid}:20", "mysql-bin.000003", 400))
    assert after(high, EventPosition(f"{uuid}:21", "mysql-bin.000003", 900))
    stream = StreamPositions("mysql")
    assert not stream.caught_up(high, {"gtids": f"{uuid}:1-19"})
    assert stream.caught_up(high, {"gtids": f"{uuid}:1-25,abc:1-3"})
    # MariaDB: the last seq of each domain; the low watermark also carries the read's binlog position.
    low = GtidWatermark(gtid_set("mariadb", "0-1-100,1-2-7"), "mariadb-bin.000002", 5000)
    assert not after(low, EventPosition("0-1-99", "mariadb-bin.000002", 4000))
    assert after(low, EventPosition("0-1-100", "mariadb-bin.000002", 5000)), "at the read's position: not seen"
    assert after(low, EventPosition("0-1-101", "mariadb-bin.000002", 4000))
    assert after(low, EventPosition("2-1-1", "mariadb-bin.000001", 10)), "a new domain"
    stream = StreamPositions("mariadb")
    assert stream.caught_up(GtidWatermark(gtid_set("mariadb", "0-1-100")), {"gtids": "0-1-100,1-2-3"})
    assert not stream.caught_up(GtidWatermark(gtid_set("mariadb", "0-1-100,1-2-7")), {"gtids": "0-1-100,1-2-3"})
