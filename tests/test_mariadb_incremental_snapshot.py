"""Incremental snapshots on a real MariaDB under concurrent writes: the replayed events equal the final table.

The window algorithm is the core's; this checks MariaDB's part of it (``cdc_mysql.incremental``:
key-ordered chunk reads, watermarks in the signal table, binlog order vs read visibility) with
four writers updating, inserting and deleting rows around the chunks being read.
"""

from __future__ import annotations

import random
import threading
import time

from mariadb_cdc import EngineThread, connector_config
from incremental_replay import replay

ROWS = 20000


def test_snapshot_under_concurrent_writes_replays_to_the_final_state(mariadb_server, mariadb_db):
    """Updates, inserts and deletes while the snapshot runs: replay == table, no row goes back to an older version."""
    mariadb_server.execute([
        "CREATE TABLE debezium_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))",
        "CREATE TABLE marker (id INT PRIMARY KEY)",
        "CREATE TABLE items (id INT PRIMARY KEY, v INT NOT NULL, pad VARCHAR(10))",
        # Even keys to start with; inserts take odd keys (never reused), so they land inside chunks too.
        f"INSERT INTO items SELECT 2 * seq, 0, 'x' FROM seq_1_to_{ROWS}",
    ], database=mariadb_db)
    config = connector_config(mariadb_server, mariadb_db, **{
        "snapshot.mode": "no_data", "signal.data.collection": f"{mariadb_db}.debezium_signal",
        "table.include.list": f"{mariadb_db}.items,{mariadb_db}.marker", "incremental.snapshot.chunk.size": 200,
        "topic.prefix": "inc"})
    engine = EngineThread(config)
    notes: list = []
    engine.engine.add_notification_listener(notes.append)
    stop = threading.Event()
    counts = {"u": 0, "c": 0, "d": 0}
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
                    cur.execute("UPDATE items SET v = v + 1 WHERE id = %s", (key,))
                    counts["u"] += 1
                elif op < 0.8:
                    odd = (base | 1) + 2 * rnd.randint(1, 300)
                    with lock:
                        if odd in used:
                            continue
                        used.add(odd)
                    cur.execute("INSERT INTO items VALUES (%s, 0, 'new')", (odd,))
                    counts["c"] += 1
                else:
                    cur.execute("DELETE FROM items WHERE id = %s", (key,))
                    counts["d"] += 1

    engine.start()
    writers = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    try:
        engine.wait(lambda rs: engine.engine.metrics.streaming.connected, "streaming")
        for w in writers:
            w.start()
        time.sleep(0.2)
        mariadb_server.execute("INSERT INTO debezium_signal VALUES ('big-1', 'execute-snapshot', "
                               f"'{{\"data-collections\": [\"{mariadb_db}.items\"]}}')", database=mariadb_db)
        engine.wait(lambda rs: any(n.type == "COMPLETED" and n.aggregate_type == "Incremental Snapshot" for n in notes), "the incremental snapshot", 90)
        stop.set()
        for w in writers:
            w.join()
        mariadb_server.execute("INSERT INTO marker VALUES (1)", database=mariadb_db)
        engine.wait(lambda rs: any(r.topic.endswith(".marker") for r in rs), "the marker")
    finally:
        stop.set()
        for w in writers:
            if w.is_alive():
                w.join()
        engine.stop()
    events = [r for r in engine.records if r.topic == f"inc.{mariadb_db}.items"]
    assert counts["u"] > 200 and counts["d"] > 50, counts
    replayed, reads = replay(events)
    final = {row[0]: row[1] for row in mariadb_server.execute("SELECT id, v FROM items", database=mariadb_db)}
    assert replayed == final
    assert reads >= ROWS - counts["d"] - 2000, reads


def test_the_signal_table_is_data_and_a_blocking_snapshot_sends_its_tables_ddl(mariadb_server, mariadb_db):
    """The signal table, left out of table.include.list: its signal and watermark rows are change events on its
    topic, no snapshot reads its rows, and a blocking snapshot sends DROP TABLE IF EXISTS and CREATE TABLE of
    the signalled table before its rows (Debezium 2.7.4: RelationalTableFilters add signal.data.collection to
    the filter, determineSnapshotSelect skips it, BinlogSnapshotChangeEventSource's on-demand readTableStructure;
    compared with Debezium 3.0.7 in tests/test_conformance_mariadb.py)."""
    mariadb_server.execute([
        "CREATE TABLE debezium_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))",
        "INSERT INTO debezium_signal VALUES ('old', 'log', '{\"message\": \"before the start\"}')",
        "CREATE TABLE marker (id INT PRIMARY KEY)",
        "CREATE TABLE items (id INT PRIMARY KEY, v INT NOT NULL)",
        "INSERT INTO items SELECT seq, 0 FROM seq_1_to_30",
    ], database=mariadb_db)
    config = connector_config(mariadb_server, mariadb_db, **{
        "signal.data.collection": f"{mariadb_db}.debezium_signal", "topic.prefix": "inc",
        "table.include.list": f"{mariadb_db}.items,{mariadb_db}.marker", "incremental.snapshot.chunk.size": 10})
    engine = EngineThread(config)
    notes: list = []
    engine.engine.add_notification_listener(notes.append)
    engine.start()
    signal_topic, items = f"inc.{mariadb_db}.debezium_signal", f"inc.{mariadb_db}.items"
    try:
        engine.wait(lambda rs: engine.engine.metrics.streaming.connected, "streaming")
        mariadb_server.execute("INSERT INTO debezium_signal VALUES ('s1', 'execute-snapshot', "
                               f"'{{\"data-collections\": [\"{mariadb_db}.items\"]}}')", database=mariadb_db)
        engine.wait(lambda rs: any(n.type == "COMPLETED" and n.aggregate_type == "Incremental Snapshot" for n in notes), "the incremental snapshot", 90)
        mariadb_server.execute("INSERT INTO debezium_signal VALUES ('b1', 'execute-snapshot', "
                               f"'{{\"data-collections\": [\"{mariadb_db}.items\"], \"type\": \"blocking\"}}')",
                               database=mariadb_db)
        engine.wait(lambda rs: sum(r.topic == items for r in rs) >= 90, "the blocking snapshot")
        mariadb_server.execute("INSERT INTO marker VALUES (1)", database=mariadb_db)
        engine.wait(lambda rs: any(r.topic.endswith(".marker") for r in rs), "the marker")
    finally:
        engine.stop()
    records = engine.snapshot()
    rows = [r.value["after"] for r in records if r.topic == signal_topic]
    assert [r["id"] for r in rows][0] == "s1" and "old" not in [r["id"] for r in rows] and rows[-1]["id"] == "b1"
    kinds = [r["type"] for r in rows[1:-1]]
    assert kinds == ["snapshot-window-open", "snapshot-window-close"] * (len(kinds) // 2) and len(kinds) >= 6
    # After the blocking signal: the table's DROP and CREATE on the schema topic, then its 30 READs.
    tail = [r for r in records[next(i for i, r in enumerate(records) if r.topic == signal_topic
                                    and r.value["after"]["id"] == "b1") + 1:] if r.topic in ("inc", items)]
    assert [r.value["ddl"].split("(")[0].strip() for r in tail[:2]] == [
        f"DROP TABLE IF EXISTS `{mariadb_db}`.`items`", "CREATE TABLE `items`"]
    assert all(r.value["source"]["snapshot"] == "true" for r in tail[:2])
    assert [r.value["op"] for r in tail[2:]] == ["r"] * 30


def test_the_initial_snapshot_never_reads_the_signal_table(mariadb_server, mariadb_db):
    """The signal table named in table.include.list: its CREATE is in the snapshot's schema events, its rows are
    never read (Debezium 2.7.4's determineSnapshotSelect); the other tables' are."""
    mariadb_server.execute([
        "CREATE TABLE debezium_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))",
        "INSERT INTO debezium_signal VALUES ('old', 'log', '{}')",
        "CREATE TABLE items (id INT PRIMARY KEY, v INT NOT NULL)",
        "INSERT INTO items VALUES (1, 0), (2, 0)",
    ], database=mariadb_db)
    config = connector_config(mariadb_server, mariadb_db, **{
        "signal.data.collection": f"{mariadb_db}.debezium_signal", "topic.prefix": "inc",
        "table.include.list": f"{mariadb_db}.items,{mariadb_db}.debezium_signal"})
    engine = EngineThread(config)
    engine.start()
    try:
        engine.wait(lambda rs: engine.engine.metrics.streaming.connected, "streaming")
        mariadb_server.execute("INSERT INTO items VALUES (3, 0)", database=mariadb_db)
        engine.wait(lambda rs: any(r.topic.endswith(".items") and r.value["op"] == "c" for r in rs), "the insert")
    finally:
        engine.stop()
    records = engine.snapshot()
    assert not [r for r in records if r.topic == f"inc.{mariadb_db}.debezium_signal"]
    assert [r.value["op"] for r in records if r.topic == f"inc.{mariadb_db}.items"] == ["r", "r", "c"]
    assert any(r.topic == "inc" and (r.value.get("ddl") or "").startswith("CREATE TABLE `debezium_signal`")
               for r in records)
