"""``snapshot.max.threads`` on PostgreSQL: tables read at once by connections sharing the slot's exported snapshot.

Every worker imports the snapshot (``SET TRANSACTION SNAPSHOT``), so rows a writer commits during the
snapshot come exactly once (read, or streamed from the slot); markers are Debezium's for several threads.
"""

from __future__ import annotations

import threading
from collections import Counter

from kit.engine import EngineThread

SIZES = {"t1": 40000, "t2": 30000, "t3": 30000, "t4": 5000}


def test_tables_read_in_parallel_each_row_once(pg_server, pg_db):
    for name, n in SIZES.items():
        pg_server.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, pad text)", dbname=pg_db)
        pg_server.execute(f"INSERT INTO {name} SELECT g, repeat('p', 40) FROM generate_series(1, {n}) g", dbname=pg_db)
    pg_server.execute("CREATE TABLE marker (id int PRIMARY KEY)", dbname=pg_db)
    config = {"connector.class": "postgres", "database.hostname": pg_server.host, "database.port": pg_server.port,
              "database.user": pg_server.user, "database.dbname": pg_db, "topic.prefix": "par",
              "poll.interval.ms": 20, "snapshot.max.threads": 3, "snapshot.fetch.size": 500}
    engine = EngineThread(config)
    stop = threading.Event()

    def writer() -> None:
        k = 0
        while not stop.is_set():
            k += 1
            for name, n in SIZES.items():
                pg_server.execute(f"INSERT INTO {name} VALUES ({n + k}, 'w')", dbname=pg_db)

    engine.start()
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        engine.wait(lambda rs: engine.engine.metrics.streaming.connected, "streaming", 120)
        stop.set()
        thread.join()
        pg_server.execute("INSERT INTO marker VALUES (1)", dbname=pg_db)
        engine.wait(lambda rs: any(r.topic.endswith(".marker") for r in rs), "the marker")
    finally:
        stop.set()
        thread.join()
        engine.stop()
    events = [r for r in engine.records if r.value is not None and r.topic.rsplit(".", 1)[-1] in SIZES]
    reads = [r for r in events if r.value["op"] == "r"]
    for name in SIZES:
        mine = [r.value["after"]["id"] for r in events if r.topic.endswith("." + name)]
        final = sorted(row[0] for row in pg_server.execute(f"SELECT id FROM {name}", dbname=pg_db))
        assert sorted(mine) == final, f"{name}: {[k for k, c in Counter(mine).items() if c > 1][:5]} repeated"
        marks = [r.value["source"]["snapshot"] for r in reads if r.topic.endswith("." + name)]
        assert marks[0] == "first_in_data_collection" and set(marks[1:-1]) <= {"true"}, (name, marks[:3])
        assert marks[-1] in ("last_in_data_collection", "last")
    assert [r.value["source"]["snapshot"] for r in reads].count("last") == 1
    assert reads[-1].value["source"]["snapshot"] == "last"
    switches = sum(1 for a, b in zip(reads, reads[1:]) if a.topic != b.topic)
    assert switches > len(SIZES), f"the tables were read one after another ({switches} switches)"
