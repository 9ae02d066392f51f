"""``snapshot.max.threads``: the initial snapshot reads several tables at once, and the hand-over stays exact.

Worker connections start their consistent snapshots under the snapshot's global read lock, so rows
committed by a writer during the snapshot come exactly once: read, or streamed. Markers are Debezium's
for more than one thread: ``first_in_data_collection``/``last_in_data_collection`` per table, no
``first``, and ``last`` on the snapshot's final record.
"""

from __future__ import annotations

import threading
from collections import Counter

from mariadb_cdc import EngineThread, connector_config

SIZES = {"t1": 30000, "t2": 20000, "t3": 20000, "t4": 5000}


def test_tables_read_in_parallel_each_row_once(mariadb_server, mariadb_db):
    statements = []
    for name, n in SIZES.items():
        statements += [f"CREATE TABLE {name} (id INT PRIMARY KEY, pad VARCHAR(40))",
                       f"INSERT INTO {name} SELECT seq, REPEAT('p', 40) FROM seq_1_to_{n}"]
    mariadb_server.execute(statements + ["CREATE TABLE marker (id INT PRIMARY KEY)"], database=mariadb_db)
    config = connector_config(mariadb_server, mariadb_db, **{"snapshot.max.threads": 3, "snapshot.fetch.size": 500})
    engine = EngineThread(config)
    stop = threading.Event()

    def writer() -> None:  # new rows while the snapshot runs (and after): each must come exactly once
        with mariadb_server.connect(mariadb_db) as conn, conn.cursor() as cur:
            k = 0
            while not stop.is_set():
                k += 1
                for name, n in SIZES.items():
                    cur.execute(f"INSERT INTO {name} VALUES (%s, 'w')", (n + k,))

    engine.start()
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        engine.wait(lambda rs: engine.engine.metrics.streaming.connected, "streaming", 120)
        stop.set()
        thread.join()
        mariadb_server.execute("INSERT INTO marker VALUES (1)", database=mariadb_db)
        engine.wait(lambda rs: any(r.topic.endswith(".marker") for r in rs), "the marker")
    finally:
        stop.set()
        thread.join()
        engine.stop()
    events = [r for r in engine.records if r.value is not None and r.topic.rsplit(".", 1)[-1] in SIZES]
    reads = [r for r in events if r.value["op"] == "r"]
    for name in SIZES:
        mine = [r.value["after"]["id"] for r in events if r.topic.endswith("." + name)]
        final = sorted(row[0] for row in mariadb_server.execute(f"SELECT id FROM {name}", database=mariadb_db))
        assert sorted(mine) == final, f"{name}: {[k for k, c in Counter(mine).items() if c > 1][:5]} repeated"
        read = [r for r in reads if r.topic.endswith("." + name)]
        assert [r.value["after"]["id"] for r in read] == sorted(r.value["after"]["id"] for r in read)
        marks = [r.value["source"]["snapshot"] for r in read]
        assert marks[0] == "first_in_data_collection" and set(marks[1:-1]) <= {"true"}, (name, marks[:3])
        assert marks[-1] in ("last_in_data_collection", "last")
    assert [r.value["source"]["snapshot"] for r in reads].count("last") == 1
    assert reads[-1].value["source"]["snapshot"] == "last"
    switches = sum(1 for a, b in zip(reads, reads[1:]) if a.topic != b.topic)
    assert switches > len(SIZES), f"the tables were read one after another ({switches} switches)"
