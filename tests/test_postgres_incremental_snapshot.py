"""Incremental snapshots against a real PostgreSQL: the watermark algorithm under concurrent writes,
stop/pause/resume, refused signals, insert_delete watermarks, and a blocking snapshot."""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable
from typing import Any


from cdc_core.engine import Engine
from cdc_core.events import ChangeRecord
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from incremental_replay import replay

SIGNAL_TABLE = "CREATE TABLE debezium_signal (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))"


def _config(pg, db: str, **extra: Any) -> dict[str, Any]:
    return {"connector.class": "postgres", "database.hostname": pg.host, "database.port": pg.port,
            "database.user": pg.user, "database.dbname": db, "topic.prefix": "inc", "poll.interval.ms": 50,
            "snapshot.mode": "no_data", "signal.data.collection": "public.debezium_signal",
            "table.include.list": "public.items,public.marker", "notification.enabled.channels": "sink",
            "notification.sink.topic.name": "inc.notifications", **extra}


class Run:
    """An engine running in a thread, collecting every record and notification."""

    def __init__(self, config: dict[str, Any]):
        self.engine = Engine(config, offset_store=MemoryOffsetStore())
        self.records: list[ChangeRecord] = []
        self.notes: list[Any] = []
        self.lock = threading.Lock()
        self.engine.add_notification_listener(self.notes.append)
        self.thread = threading.Thread(target=self.engine.run, args=(self._handle,), daemon=True)

    def _handle(self, records: list[ChangeRecord]) -> None:
        with self.lock:
            self.records.extend(records)

    def __enter__(self) -> Run:
        self.thread.start()
        self.wait(lambda: self.engine.metrics.streaming.connected, "streaming")
        return self

    def __exit__(self, *exc: object) -> None:
        self.engine.stop()
        self.thread.join(30)

    def wait(self, condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; notifications: {[n.type for n in self.notes]}")
            if not self.thread.is_alive():
                raise AssertionError(f"the engine stopped before {what}")
            time.sleep(0.02)

    def note_types(self, aggregate: str = "Incremental Snapshot") -> list[str]:
        return [n.type for n in self.notes if n.aggregate_type == aggregate]

    def topic(self, name: str) -> list[ChangeRecord]:
        with self.lock:
            return [r for r in self.records if r.topic == name]


def _marker(pg, db: str, run: Run, value: int) -> None:
    """Write a marker row and wait for its event: everything committed before it has been seen."""
    pg.execute("INSERT INTO marker VALUES (%s)", dbname=db, params=(value,))
    run.wait(lambda: any(r.value and r.value["after"] and r.value["after"]["id"] == value
                         for r in run.topic("inc.public.marker")), f"marker {value}")


def test_snapshot_under_concurrent_writes_replays_to_the_final_state(pg_server, pg_db):
    """100k rows updated, inserted and deleted while the snapshot runs: replay == table, no key goes back."""
    pg_server.execute(SIGNAL_TABLE, dbname=pg_db)
    pg_server.execute("CREATE TABLE marker (id int PRIMARY KEY)", dbname=pg_db)
    pg_server.execute("CREATE TABLE items (id int PRIMARY KEY, v int NOT NULL, pad text)", dbname=pg_db)
    # Even keys to start with; inserts take odd keys (never reused), so they land inside chunks too.
    pg_server.execute("INSERT INTO items SELECT 2 * g, 0, 'x' FROM generate_series(1, 100000) g", dbname=pg_db)
    stop = threading.Event()
    counts = {"u": 0, "c": 0, "d": 0}
    used: set[int] = set()
    used_lock = threading.Lock()

    with Run(_config(pg_server, pg_db)) as run:
        def writer(seed: int) -> None:
            rnd = random.Random(seed)
            with pg_server.connect(pg_db) as conn:
                conn.autocommit = True
                while not stop.is_set():
                    # Aim at the chunks being read now (just ahead of the last emitted one) and anywhere.
                    ahead = run.engine.metrics.snapshot.chunk_to
                    base = int(ahead) if ahead.isdigit() else 0
                    key = 2 * rnd.randint(1, 100000) if rnd.random() < 0.3 else min(200000, base + 2 * rnd.randint(1, 1500))
                    op = rnd.random()
                    with conn.transaction():
                        if op < 0.6:
                            conn.execute("UPDATE items SET v = v + 1 WHERE id = %s", (key,))
                            counts["u"] += 1
                        elif op < 0.8:
                            odd = (base | 1) + 2 * rnd.randint(1, 1500)  # an odd key near the snapshot, never reused
                            with used_lock:
                                if odd in used:
                                    continue
                                used.add(odd)
                            conn.execute("INSERT INTO items VALUES (%s, 0, 'new')", (odd,))
                            counts["c"] += 1
                        else:
                            conn.execute("DELETE FROM items WHERE id = %s", (key,))
                            counts["d"] += 1

        writers = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
        for w in writers:
            w.start()
        try:
            time.sleep(0.3)
            pg_server.execute("INSERT INTO debezium_signal VALUES ('big-1', 'execute-snapshot', "
                              "'{\"data-collections\": [\"public.items\"]}')", dbname=pg_db)
            run.wait(lambda: "COMPLETED" in run.note_types(), "the incremental snapshot", 60)
        finally:
            stop.set()
            for w in writers:
                w.join()
        _marker(pg_server, pg_db, run, 1)
        events = run.topic("inc.public.items")

    assert counts["u"] > 500 and counts["d"] > 100, counts
    replayed, reads = replay(events)
    final = {row[0]: row[1] for row in pg_server.execute("SELECT id, v FROM items", dbname=pg_db)}
    assert replayed == final
    assert reads >= 100000 - counts["d"] - 2000, reads  # (rows changed inside their window are streamed instead)


def _signal(pg, db: str, signal_id: str, type_: str, data: str) -> None:
    pg.execute("INSERT INTO debezium_signal VALUES (%s, %s, %s)", dbname=db, params=(signal_id, type_, data))


def test_pause_resume_stop_and_refused_signals(pg_server, pg_db):
    """PAUSED stops the chunks and RESUMED continues; stop-snapshot needs a type and then ABORTs; bad data is refused."""
    pg_server.execute(SIGNAL_TABLE, dbname=pg_db)
    pg_server.execute("CREATE TABLE marker (id int PRIMARY KEY)", dbname=pg_db)
    pg_server.execute("CREATE TABLE items (id int PRIMARY KEY, color text)", dbname=pg_db)
    pg_server.execute("INSERT INTO items SELECT g, CASE WHEN g % 3 = 0 THEN 'blue' ELSE 'red' END "
                      "FROM generate_series(1, 20000) g", dbname=pg_db)
    config = _config(pg_server, pg_db, **{"incremental.snapshot.chunk.size": 100,
                                          "incremental.snapshot.watermarking.strategy": "insert_delete"})
    with Run(config) as run:
        reads = lambda: [r for r in run.topic("inc.public.items") if r.value and r.value["op"] == "r"]  # noqa: E731
        run.engine.signal("execute-snapshot", {"data-collections": ["public.items"]}, "s1")
        run.wait(lambda: len(reads()) >= 500, "the first chunks")
        run.engine.signal("pause-snapshot", {"type": "incremental"})
        run.wait(lambda: "PAUSED" in run.note_types(), "PAUSED")
        assert run.engine.metrics.values()["snapshot"]["SnapshotPaused"] is True
        paused_at = -1
        while paused_at != len(reads()):  # the windows read before the pause still close
            paused_at = len(reads())
            time.sleep(0.3)
        time.sleep(0.7)
        assert len(reads()) == paused_at < 20000, "chunks were read while paused"
        run.engine.signal("resume-snapshot", {"type": "incremental"})
        run.wait(lambda: len(reads()) > paused_at + 200, "chunks after RESUMED")
        run.engine.signal("stop-snapshot", {"data-collections": ["public.items"]}, "no-type")
        run.wait(lambda: "REJECTED" in run.note_types("Signal"), "the refused stop")
        run.engine.signal("stop-snapshot", {"type": "INCREMENTAL", "data-collections": ["public.items"]})
        run.wait(lambda: "ABORTED" in run.note_types(), "ABORTED")
        _marker(pg_server, pg_db, run, 1)
        stopped_at = len(reads())
        assert stopped_at < 20000
        # Malicious or malformed data is refused, named in the notification, and nothing runs.
        bad = [
            ('evil-2', {"data-collections": ['"public"."items"; DROP TABLE items; --"']}),
            ('evil-3', {"data-collections": ["public.items"], "additional-conditions": [
                {"data-collection": "public.items", "filter": "color = 'blue'; DROP TABLE items"}]}),
            ('evil-4', {"data-collections": ["public.items"], "additional-conditions": [
                {"data-collection": "public.items", "filter": "1=1) OR (select pg_sleep(10)) IS NULL --"}]}),
            ('evil-5', {"data-collections": ["public.items"], "surrogate-key": "id; DROP TABLE items"}),
        ]
        for signal_id, data in bad:
            _signal(pg_server, pg_db, signal_id, "execute-snapshot", json.dumps(data))
        run.wait(lambda: len(run.note_types("Signal")) >= 1 + len(bad), "the refusals")
        sink = {r.value["id"]: r.value for r in run.topic("inc.notifications") if r.value["aggregate_type"] == "Signal"}
        for signal_id, _ in bad:
            assert sink[signal_id]["type"] == "REJECTED"
            assert sink[signal_id]["additional_data"]["reason"]
        # An entry naming no captured table is only ever compared with the known names: as Debezium 2.7.4 it does
        # not refuse the signal, the snapshot reports it UNKNOWN_SCHEMA (isTableInvalid) and reads nothing.
        evil = "public.items'; DROP TABLE items; --"
        _signal(pg_server, pg_db, "evil-1", "execute-snapshot", json.dumps({"data-collections": [evil]}))
        run.wait(lambda: any(n.additional_data.get("scanned_collection") == evil for n in run.notes), "the unknown")
        (unknown,) = [n for n in run.notes if n.additional_data.get("scanned_collection") == evil]
        assert (unknown.type, unknown.additional_data["status"]) == ("TABLE_SCAN_COMPLETED", "UNKNOWN_SCHEMA")
        assert "not allowed in a filter" in sink["evil-3"]["additional_data"]["reason"]
        # A filter is applied as a bound predicate.
        run.engine.signal("execute-snapshot", {"data-collections": ["public.items"], "additional-conditions": [
            {"data-collection": "public.items", "filter": "color = 'blue' AND id <= 3000"}]}, "blue")
        run.wait(lambda: run.note_types().count("COMPLETED") >= 2, "the filtered snapshot")  # evil-1's, then it
        _marker(pg_server, pg_db, run, 2)
        blue = [r.value["after"] for r in reads()[stopped_at:]]
    assert pg_server.execute("SELECT count(*) FROM items", dbname=pg_db)[0][0] == 20000
    assert sorted(a["id"] for a in blue) == list(range(3, 3001, 3))
    # insert_delete: every window's watermark row is gone again, only the user's signals remain.
    assert pg_server.execute("SELECT count(*) FROM debezium_signal", dbname=pg_db)[0][0] == len(bad) + 1  # evil-1
    types = run.note_types()
    assert types[0] == "STARTED" and "IN_PROGRESS" in types and types.index("PAUSED") < types.index("RESUMED")


def test_blocking_snapshot_pauses_streaming_and_resumes(pg_server, pg_db):
    """``type: blocking`` reads the table with the initial snapshot's markers between streamed changes."""
    pg_server.execute(SIGNAL_TABLE, dbname=pg_db)
    pg_server.execute("CREATE TABLE marker (id int PRIMARY KEY)", dbname=pg_db)
    pg_server.execute("CREATE TABLE items (id int PRIMARY KEY, v int)", dbname=pg_db)
    pg_server.execute("INSERT INTO items SELECT g, 0 FROM generate_series(1, 5000) g", dbname=pg_db)
    with Run(_config(pg_server, pg_db)) as run:
        pg_server.execute("UPDATE items SET v = 1 WHERE id = 1", dbname=pg_db)
        _signal(pg_server, pg_db, "b1", "execute-snapshot", '{"type": "blocking", "data-collections": ["public.items"],'
                ' "additional-conditions": [{"data-collection": "public.items",'
                ' "filter": "SELECT * FROM public.items WHERE id <= 4000"}]}')
        pg_server.execute("UPDATE items SET v = 2 WHERE id = 2", dbname=pg_db)
        _marker(pg_server, pg_db, run, 1)
        events = [r.value for r in run.topic("inc.public.items") if r.value]
    ops = [e["op"] for e in events]
    assert ops[0] == "u" and ops[-1] == "u"
    reads = [e for e in events if e["op"] == "r"]
    assert sorted(e["after"]["id"] for e in reads) == list(range(1, 4001))  # heap order, as the initial snapshot
    assert reads[0]["source"]["snapshot"] == "first" and reads[-1]["source"]["snapshot"] == "last"
    assert {e["source"]["snapshot"] for e in reads[1:-1]} == {"true"}
    assert next(e for e in reads if e["after"]["id"] == 1)["after"]["v"] == 1
    # Streaming paused at the signal: the update after it comes after the snapshot (a possible duplicate).
    assert ops.index("r") > 0 and ops[-1] == "u" and events[-1]["after"] == {"id": 2, "v": 2}
    # The start's own snapshot (no_data: none) said SKIPPED; the blocking snapshot then STARTED ... COMPLETED.
    types = [n.type for n in run.notes if n.aggregate_type == "Initial Snapshot"]
    assert types[0] == "SKIPPED" and types[1] == "STARTED" and types[-1] == "COMPLETED"


def test_composite_and_surrogate_keys_and_tables_read_concurrently(pg_server, pg_db):
    """Composite keys chunk in key order; a table without a key needs surrogate-key; snapshot.max.threads tables at once."""
    pg_server.execute(SIGNAL_TABLE, dbname=pg_db)
    pg_server.execute("CREATE TABLE marker (id int PRIMARY KEY)", dbname=pg_db)
    pg_server.execute("CREATE TABLE pairs (a int, b text, v int, PRIMARY KEY (a, b))", dbname=pg_db)
    pg_server.execute("INSERT INTO pairs SELECT g / 10, 'x' || (g % 10), g FROM generate_series(0, 2999) g", dbname=pg_db)
    pg_server.execute("CREATE TABLE nopk (id int, v text)", dbname=pg_db)
    pg_server.execute("INSERT INTO nopk SELECT g, 'v' FROM generate_series(1, 3000) g", dbname=pg_db)
    for name in ("t1", "t2", "t3"):
        pg_server.execute(f"CREATE TABLE {name} (id int PRIMARY KEY)", dbname=pg_db)
        pg_server.execute(f"INSERT INTO {name} SELECT generate_series(1, 10000)", dbname=pg_db)
    config = _config(pg_server, pg_db, **{"incremental.snapshot.chunk.size": 7, "snapshot.max.threads": 3,
                                          "table.include.list": r"public\..*", "table.exclude.list": None})
    config.pop("table.exclude.list")
    with Run(config) as run:
        def reads(table: str) -> list:
            return [r for r in run.topic(f"inc.public.{table}") if r.value and r.value["op"] == "r"]

        run.engine.signal("execute-snapshot", {"data-collections": ["public.pairs", "public.nopk"]}, "k1")
        run.wait(lambda: "COMPLETED" in run.note_types(), "the pairs snapshot")
        # In-process listeners hear COMPLETED when the last window closes, before its READs reach the handler.
        run.wait(lambda: len(reads("pairs")) >= 3000, "the last window's READs")
        assert [(r.key["a"], r.key["b"]) for r in reads("pairs")] == [
            (g // 10, f"x{g % 10}") for g in sorted(range(3000), key=lambda g: (g // 10, f"x{g % 10}"))]
        scans = {n.additional_data["scanned_collection"]: n.additional_data["status"]
                 for n in run.notes if n.type == "TABLE_SCAN_COMPLETED"}
        assert scans == {"public.pairs": "SUCCEEDED", "public.nopk": "NO_PRIMARY_KEY"}
        run.engine.signal("execute-snapshot", {"data-collections": ["public.nopk"], "surrogate-key": "id"}, "k2")
        run.wait(lambda: run.note_types().count("COMPLETED") == 2, "the surrogate-key snapshot")
        run.wait(lambda: len(reads("nopk")) >= 3000, "the last window's READs")
        assert [r.value["after"]["id"] for r in reads("nopk")] == list(range(1, 3001))
        snapshot_metrics = run.engine.metrics.values()["snapshot"]
        assert snapshot_metrics["TableTo"] == "3000" and snapshot_metrics["ChunkTo"] == "3000"
        assert snapshot_metrics["ChunkId"]
        run.engine.signal("execute-snapshot", {"data-collections": [r"public\.t[123]"]}, "k3")
        run.wait(lambda: run.note_types().count("COMPLETED") == 3, "the three tables")
        _marker(pg_server, pg_db, run, 1)
        for name in ("t1", "t2", "t3"):
            assert [r.key["id"] for r in reads(name)] == list(range(1, 10001))
        order = [r.topic for r in run.records if r.value and r.value.get("op") == "r" and r.topic[-2] == "t"]
    switches = sum(1 for x, y in zip(order, order[1:]) if x != y)
    assert switches > 10, "the three tables were not read at the same time"


def test_the_signal_table_is_streamed_as_data_and_never_snapshotted(pg_server, pg_db):
    """The signal table, left out of table.include.list: its signal and watermark rows are change events on its
    topic and the initial snapshot reads none of its rows (Debezium 2.7.4's RelationalTableFilters add
    signal.data.collection to the filter; determineSnapshotSelect skips it; compared with Debezium 3.0.7 in
    tests/test_conformance_postgres.py)."""
    pg_server.execute(SIGNAL_TABLE, dbname=pg_db)
    pg_server.execute("INSERT INTO debezium_signal VALUES ('old', 'log', '{\"message\": \"before the start\"}')",
                      dbname=pg_db)
    pg_server.execute("CREATE TABLE marker (id int PRIMARY KEY)", dbname=pg_db)
    pg_server.execute("CREATE TABLE items (id int PRIMARY KEY, v int)", dbname=pg_db)
    pg_server.execute("INSERT INTO items SELECT g, 0 FROM generate_series(1, 30) g", dbname=pg_db)
    with Run(_config(pg_server, pg_db, **{"snapshot.mode": "initial", "incremental.snapshot.chunk.size": 10})) as run:
        _signal(pg_server, pg_db, "s1", "execute-snapshot", '{"data-collections": ["public.items"]}')
        run.wait(lambda: "COMPLETED" in run.note_types(), "the incremental snapshot")
        _marker(pg_server, pg_db, run, 1)
        rows = [r.value for r in run.topic("inc.public.debezium_signal") if r.value]
    assert {r["op"] for r in rows} == {"c"} and "old" not in [r["after"]["id"] for r in rows]
    assert rows[0]["after"]["id"] == "s1" and rows[0]["after"]["type"] == "execute-snapshot"
    kinds = [r["after"]["type"] for r in rows[1:]]
    assert kinds == ["snapshot-window-open", "snapshot-window-close"] * (len(kinds) // 2) and len(kinds) >= 6


def test_a_blocking_snapshot_never_reads_the_signal_table(pg_server, pg_db):
    """Neither the initial snapshot nor a blocking one naming the signal table (here in table.include.list) reads
    its rows, as Debezium 2.7.4's determineSnapshotSelect; the other tables' are read as usual."""
    pg_server.execute(SIGNAL_TABLE, dbname=pg_db)
    pg_server.execute("INSERT INTO debezium_signal VALUES ('old', 'log', '{}')", dbname=pg_db)
    pg_server.execute("CREATE TABLE marker (id int PRIMARY KEY)", dbname=pg_db)
    pg_server.execute("CREATE TABLE items (id int PRIMARY KEY, v int)", dbname=pg_db)
    pg_server.execute("INSERT INTO items SELECT g, 0 FROM generate_series(1, 5) g", dbname=pg_db)
    config = _config(pg_server, pg_db, **{"table.include.list": "public.items,public.marker,public.debezium_signal",
                                          "snapshot.mode": "initial"})
    with Run(config) as run:
        _signal(pg_server, pg_db, "b1", "execute-snapshot",
                '{"type": "blocking", "data-collections": ["public.items", "public.debezium_signal"]}')
        run.wait(lambda: "COMPLETED" in [n.type for n in run.notes if n.aggregate_type == "Initial Snapshot"],
                 "the blocking snapshot")
        _marker(pg_server, pg_db, run, 1)
        signal_rows = [r.value["op"] for r in run.topic("inc.public.debezium_signal") if r.value]
        reads = [r.value for r in run.topic("inc.public.items") if r.value]
    assert signal_rows == ["c"]  # the signal row itself, streamed
    snapshots = [e["source"]["snapshot"] for e in reads]
    assert snapshots[5:] == ["first", "true", "true", "true", "last"]  # after the initial snapshot's 5 READs
