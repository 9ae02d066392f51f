"""Where a SQL Server blocking snapshot pauses the stream, and the positions its events carry, as Debezium 2.7.4's.

Debezium's SqlServerChangeEventSourceCoordinator streams in rounds: ``executeIteration`` for every database
(one poll window each: everything up to the max LSN, or ``max.iteration.transactions``), and only after the
round ``if (context.isPaused()) { ... waitSnapshotCompletion() }``. The signal is read from the signal table's
change table inside an iteration (EventDispatcher hands the row to the source channel) and the BlockingSnapshot
action's ``doBlockingSnapshot`` only sets ``paused``; so the changes after the signal in its window, and the
other databases' windows of that round, reach the topics before the snapshot's records. The snapshot runs on
the signal's offset context, the stream's SqlServerOffsetContext (SqlServerSnapshotChangeEventSource
.determineSnapshotOffset keeps the previous offset unless ``snapshot.mode=always``, which makes a new one at
the max LSN), so its CREATE events and READs carry ``change_lsn``/``commit_lsn``/``event_serial_no`` of the
last change the round streamed (``setChangePosition``), and streaming resumes from that same context:
nothing is lost or streamed twice.
"""

from __future__ import annotations

import time

import json

from kit.engine import EngineThread, streaming_with_notifications

from cdc_core.signals import actions
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_sqlserver.standin.testing import inventory, standin  # noqa: F401  (fixtures)
from test_sqlserver_databases import OTHER, second  # noqa: F401  (fixture)

SIGNAL = "CREATE TABLE dbo.debezium_signal (id VARCHAR(42) NOT NULL PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))"
LSNS = ("change_lsn", "commit_lsn", "event_serial_no")


def _blocking(signal_id: str, *collections: str) -> str:
    """The INSERT of an execute-snapshot signal of type blocking."""
    data = json.dumps({"data-collections": list(collections), "type": "blocking"})
    return f"INSERT INTO dbo.debezium_signal VALUES ('{signal_id}', 'execute-snapshot', '{data}')"


def _lsns(source_or_offset: dict) -> tuple:
    return tuple(source_or_offset.get(k) for k in LSNS)


def _started(config: dict, store: MemoryOffsetStore, history=None, slow: float = 0.0) -> tuple[EngineThread, list]:
    return streaming_with_notifications(config, store, history, slow)


def _completed(notes: list) -> bool:
    """A snapshot that read tables completed (no_data's own STARTED/COMPLETED pair, which reads none, does not count)."""
    kinds = [n.type for n in notes if n.aggregate_type == "Initial Snapshot"]
    return "IN_PROGRESS" in kinds and "COMPLETED" in kinds[kinds.index("IN_PROGRESS"):]


def _reads(records: list) -> list:
    return [r for r in records if r.value and r.value.get("op") == "r"]


def _items(standin, rows: int = 5) -> dict:
    standin.create_table(SIGNAL)
    standin.create_table("CREATE TABLE dbo.items (id INT NOT NULL PRIMARY KEY, v INT NOT NULL)")
    standin.execute(f"INSERT INTO dbo.items SELECT g, 0 FROM generate_series(1, {rows}) g")
    standin.enable_db()
    standin.enable_table("dbo", "items")
    standin.enable_table("dbo", "debezium_signal")
    standin.agent.start()
    return standin.properties(**{"snapshot.mode": "no_data", "table.include.list": "dbo.items", "poll.interval.ms": 50,
                                 "signal.data.collection": f"{standin.dbname}.dbo.debezium_signal"})


def test_changes_after_the_signal_in_its_poll_window_are_streamed_before_the_snapshot(standin):
    config = _items(standin)
    db = standin.dbname
    store = MemoryOffsetStore()
    runner, notes = _started(config, store)
    try:
        # The agent captures the signal and the two transactions after it in one go: one poll window holds all three.
        standin.agent.stop()
        standin.execute(_blocking("b-1", f"{db}.dbo.items"))
        standin.execute("INSERT INTO dbo.items VALUES (6, 6)")
        standin.execute("UPDATE dbo.items SET v = 7 WHERE id = 1")
        standin.agent.start()
        runner.wait(lambda rs: _completed(notes) and len(_reads(rs)) >= 6,
                    "the blocking snapshot", 60)
        standin.execute("INSERT INTO dbo.items VALUES (7, 7)")
        runner.wait(lambda rs: any(r.value and r.value.get("op") == "c" and r.key == {"id": 7} for r in rs),
                    "the insert after the snapshot", 60)
    finally:
        runner.stop()
    records = [r for r in runner.records if r.value]
    records = records[next(i for i, r in enumerate(records) if r.key == {"id": "b-1"}):]  # from the signal on
    kinds = [("schema" if r.topic == "server1" else r.topic.rsplit(".", 1)[1], r.value.get("op")) for r in records]
    # The signal's window: the signal, then the insert and the update committed after it, each exactly once, then
    # the snapshot (its CREATE, then its rows: the insert and the update included), then the stream again.
    assert kinds == [("debezium_signal", "c"), ("items", "c"), ("items", "u"), ("schema", None),
                     *[("items", "r")] * 6, ("items", "c")]
    signal, insert, update, create, *reads, last = records
    assert (insert.key, update.key, last.key) == ({"id": 6}, {"id": 1}, {"id": 7})
    assert sorted((r.key["id"], r.value["after"]["v"]) for r in reads) == [(1, 7), (2, 0), (3, 0), (4, 0), (5, 0),
                                                                           (6, 6)]
    # Every source position of the snapshot is the stream's where it paused: the round's last change (the update,
    # an op 3/4 pair: event_serial_no 2 as Debezium's setChangePosition counts it), not the signal's row.
    paused = _lsns(update.value["source"])
    assert paused[0] and paused[1] and paused[2] == 2
    assert paused != _lsns(signal.value["source"])
    assert _lsns(create.value["source"]) == paused and create.value["source"]["snapshot"] == "true"
    assert {_lsns(r.value["source"]) for r in reads} == {paused}
    assert [r.value["source"]["snapshot"] for r in reads][-1] == "last"
    # Their offsets: the paused position (plus what is left to read: a crash resumes the snapshot, then streams from
    # there); the stored offset after the stream went on is the last change's.
    assert {_lsns(r.offset) for r in [create, *reads]} == {_lsns(update.offset)} == {paused}
    assert all("blocking_snapshot" in r.offset for r in reads)
    assert _lsns(store.get({"server": "server1", "database": db})) == _lsns(last.value["source"])

    # A restart goes on from there: only what came after.
    standin.execute("INSERT INTO dbo.items VALUES (8, 8)")
    runner, _ = _started(config, store)
    try:
        runner.wait(lambda rs: any(r.value and r.key == {"id": 8} for r in rs), "the next insert", 60)
    finally:
        runner.stop()
    assert [(r.value["op"], r.key) for r in runner.records if r.value and r.topic.endswith(".items")] == \
        [("c", {"id": 8})]


def test_a_stop_in_the_middle_of_the_snapshot_resumes_it_then_streams_from_the_rounds_end(standin):
    """The snapshot's offsets carry the paused position (the round's end) and the tables left: a restart reads the
    rest, then streams from there, so the changes streamed before the snapshot are not delivered again."""
    from cdc_core.stores.memory_history import MemorySchemaHistoryStore

    config = {**_items(standin, rows=3000), "max.batch.size": 200, "max.queue.size": 400}
    db = standin.dbname
    store, history = MemoryOffsetStore(), MemorySchemaHistoryStore()
    partition = {"server": "server1", "database": db}
    runner, _ = _started(config, store, history, slow=0.05)
    try:
        standin.agent.stop()
        standin.execute(_blocking("b-4", f"{db}.dbo.items"))
        standin.execute("INSERT INTO dbo.items VALUES (100001, 1)")
        standin.execute("UPDATE dbo.items SET v = 7 WHERE id = 1")
        standin.agent.start()
        runner.wait(lambda rs: len(_reads(rs)) >= 300, "the first rows of the snapshot", 60)
    finally:
        runner.stop()
    before = [r for r in runner.records if r.value and r.topic.endswith(".items")]
    update = next(r for r in before if r.value["op"] == "u")
    assert [r.value["op"] for r in before if r.value["op"] != "r"] == ["c", "u"]
    stored = store.get(partition)
    assert "blocking_snapshot" in stored and _lsns(stored) == _lsns(update.value["source"])
    assert len(_reads(before)) < 3001  # stopped in the middle

    runner, notes = _started(config, store, history)
    try:
        runner.wait(lambda rs: _completed(notes) and len(_reads(rs)) >= 3001, "the rest of the snapshot", 60)
        # Idle polls after it store checkpoints: none may carry the finished snapshot on (a restart would take it
        # again).
        deadline = time.monotonic() + 3
        while "blocking_snapshot" in store.get(partition) and time.monotonic() < deadline:
            time.sleep(0.05)
        idle = store.get(partition)
        standin.execute("INSERT INTO dbo.items VALUES (100002, 2)")
        runner.wait(lambda rs: any(r.value and r.key == {"id": 100002} for r in rs), "the insert after it", 60)
    finally:
        runner.stop()
    after = [r for r in runner.records if r.value and r.topic.endswith(".items")]
    # The table again from its start (the current one is re-read), at the same paused position; then only the change
    # made after: the insert and the update of the signal's round are not streamed again.
    assert sorted(r.key["id"] for r in _reads(after)) == [*range(1, 3001), 100001]
    assert {_lsns(r.value["source"]) for r in _reads(after)} == {_lsns(update.value["source"])}
    assert [(r.value["op"], r.key["id"]) for r in after if r.value["op"] != "r"] == [("c", 100002)]
    assert "blocking_snapshot" not in store.get(partition)
    assert "blocking_snapshot" not in idle, idle


def test_snapshot_mode_always_gives_the_snapshot_the_max_lsn(standin):
    """determineSnapshotOffset with snapshot.mode=always: a new offset context at the max LSN (commit_lsn only)."""
    config = {**_items(standin), "snapshot.mode": "always"}
    db = standin.dbname
    runner, notes = _started(config, MemoryOffsetStore())
    try:
        standin.execute("UPDATE dbo.items SET v = 1 WHERE id = 2")
        runner.wait(lambda rs: any(r.value and r.value.get("op") == "u" for r in rs), "the update", 60)
        runner.engine.signal("execute-snapshot", {"data-collections": [f"{db}.dbo.items"], "type": "blocking"})
        runner.wait(lambda rs: _completed(notes) and len(_reads(rs)) >= 10,
                    "the blocking snapshot", 60)
    finally:
        runner.stop()
    records = [r for r in runner.records if r.value]
    update = next(r for r in records if r.value.get("op") == "u")
    after = records[records.index(update) + 1:]
    reads = [r for r in after if r.value.get("op") == "r"]
    assert len(reads) == 5
    max_lsn = update.value["source"]["commit_lsn"]  # nothing was captured after it
    assert {_lsns(r.value["source"]) for r in reads} == {(None, max_lsn, None)}
    (create,) = [r for r in after if r.topic == "server1"]
    assert _lsns(create.value["source"]) == (None, max_lsn, None)


def _two_databases(inventory, second, **extra) -> tuple[dict, str, str, str]:
    """The signal table in the first database, ``dbo.orders`` in the second, one connector for both: (config, the
    first database, the customers and orders topics)."""
    inventory.create_table(SIGNAL)
    inventory.enable_table("dbo", "debezium_signal")
    # (A table of its own in the second database: a blocking snapshot naming two databases' dbo.customers reads one
    # of them, as the core keys a blocking snapshot's tables by schema.table.)
    second.create_table("CREATE TABLE dbo.orders (id INT NOT NULL PRIMARY KEY, qty INT NOT NULL)")
    second.execute("INSERT INTO dbo.orders VALUES (1, 1), (2, 2)")
    second.enable_table("dbo", "orders")
    first = inventory.dbname
    config = inventory.properties(**{"database.names": f"{first},{OTHER}", "snapshot.mode": "no_data",
                                     "table.include.list": "dbo.customers,dbo.orders", "poll.interval.ms": 50,
                                     "signal.data.collection": f"{first}.dbo.debezium_signal", **extra})
    return config, first, f"server1.{first}.dbo.customers", f"server1.{OTHER}.dbo.orders"


def _data(records: list, topic: str) -> list:
    return [r for r in records if r.value and r.topic == topic]


def test_two_databases_the_rest_of_the_round_comes_before_the_snapshot(inventory, second, monkeypatch):
    """The signal database's window and the other database's poll of the same round are streamed first; each
    database's snapshot events carry its own stream's position at the pause."""
    config, first, customers, orders = _two_databases(inventory, second)
    # The other database's change is captured while the signal is handled (on the engine's connector thread,
    # before the round reaches that database): its poll in the signal's round holds it, deterministically.
    original = actions.ACTIONS["execute-snapshot"]

    def execute_snapshot(ctl, record, data):
        original(ctl, record, data)
        if record.id == "b-2":
            second.agent.start()
            second.wait_captured()

    monkeypatch.setitem(actions.ACTIONS, "execute-snapshot", execute_snapshot)
    store = MemoryOffsetStore()
    runner, notes = _started(config, store)

    try:
        # Both databases stream (a change each seen).
        inventory.execute("UPDATE dbo.customers SET email = 'warm@x' WHERE id = 1001")
        second.execute("UPDATE dbo.orders SET qty = 10 WHERE id = 1")
        runner.wait(lambda rs: _data(rs, customers) and _data(rs, orders), "both databases streaming", 60)
        second.agent.stop()
        second.execute("UPDATE dbo.orders SET qty = 20 WHERE id = 2")
        inventory.agent.stop()
        inventory.execute(_blocking("b-2", f"{first}.dbo.customers", f"{OTHER}.dbo.orders"))
        inventory.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('n', 'n', 'n@x')")
        inventory.agent.start()
        runner.wait(lambda rs: _completed(notes) and len(_reads(rs)) >= 7, "the blocking snapshot", 60)
        inventory.execute("DELETE FROM dbo.customers WHERE id = 1005")
        second.execute("UPDATE dbo.orders SET qty = 30 WHERE id = 1")
        runner.wait(lambda rs: any(r.value["op"] == "d" for r in _data(rs, customers))
                    and any(r.value["after"]["qty"] == 30 for r in _data(rs, orders)), "the changes after", 60)
    finally:
        runner.stop()
    records = [r for r in runner.records if r.value]
    records = records[next(i for i, r in enumerate(records) if r.key == {"id": "b-2"}):]  # from the signal on
    first_read = next(i for i, r in enumerate(records) if r.value.get("op") == "r")
    creates = [r for r in records if r.topic == "server1"]
    insert = next(r for r in _data(records, customers) if r.value["op"] == "c")
    same_round = next(r for r in _data(records, orders) if r.value["op"] == "u")
    assert same_round.value["after"] == {"id": 2, "qty": 20}
    # Before the snapshot (its CREATEs, then its rows): the signal's window (the insert after it) and the other
    # database's poll of that round (its update); after it, the changes made later. Each change exactly once.
    assert records.index(insert) < records.index(same_round) < records.index(creates[0])
    # One database after the other (each in its own transaction): its CREATE, then its rows.
    by_db = [(c.key["databaseName"], records.index(c)) for c in creates]
    assert [db for db, _ in by_db] == [first, OTHER] and by_db[0][1] < first_read
    assert all(r.topic == orders for r in records[by_db[1][1] + 1:] if r.value.get("op") == "r")
    later = [(r.value["op"], r.topic) for r in records[first_read:] if r.value.get("op") not in (None, "r")]
    assert sorted(later) == [("d", customers), ("u", orders)]
    streamed = [(r.topic, r.key, r.value["op"]) for r in records
                if r.topic in (customers, orders) and r.value["op"] != "r"]
    assert streamed.count((customers, {"id": 1005}, "c")) == streamed.count((orders, {"id": 2}, "u")) == 1
    assert len(streamed) == 4
    # Each database's CREATE and rows carry its own stream's position at the pause: its last change of the round.
    reads = {topic: [r for r in _data(records, topic) if r.value["op"] == "r"] for topic in (customers, orders)}
    assert (len(reads[customers]), len(reads[orders])) == (5, 2)
    assert {_lsns(r.value["source"]) for r in reads[customers]} == {_lsns(insert.value["source"])}
    assert {_lsns(r.value["source"]) for r in reads[orders]} == {_lsns(same_round.value["source"])}
    assert {c.key["databaseName"]: _lsns(c.value["source"]) for c in creates} == {
        first: _lsns(insert.value["source"]), OTHER: _lsns(same_round.value["source"])}
    # The snapshot's offsets are the signal database's (its position at the pause, what is left to read), stored
    # under its partition; each database's stored offset afterwards is its own last change's.
    every_read = [*creates, *reads[customers], *reads[orders]]
    assert {r.partition["database"] for r in every_read} == {first}
    assert {_lsns(r.offset) for r in every_read} == {_lsns(insert.offset)}
    assert _lsns(store.get({"server": "server1", "database": first})) == \
        _lsns(_data(records, customers)[-1].value["source"])
    assert _lsns(store.get({"server": "server1", "database": OTHER})) == \
        _lsns(_data(records, orders)[-1].value["source"])


def test_two_tasks_the_signal_databases_task_pauses_at_the_end_of_its_round(inventory, second):
    """tasks.max=2, a task (thread) per database, each streaming in rounds of its own (Debezium: a task per database,
    each pausing after its own round): the signal's window comes first; the other database's rows carry where its
    stream stood at its task's last round end, its last change."""
    config, first, customers, orders = _two_databases(inventory, second, **{"tasks.max": 2})
    store = MemoryOffsetStore()
    runner, notes = _started(config, store)

    try:
        inventory.execute("UPDATE dbo.customers SET email = 'warm@x' WHERE id = 1001")
        second.execute("UPDATE dbo.orders SET qty = 20 WHERE id = 2")
        runner.wait(lambda rs: _data(rs, customers) and _data(rs, orders), "both databases streaming", 60)
        inventory.agent.stop()
        inventory.execute(_blocking("b-3", f"{first}.dbo.customers", f"{OTHER}.dbo.orders"))
        inventory.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('n', 'n', 'n@x')")
        inventory.agent.start()
        runner.wait(lambda rs: _completed(notes) and len(_reads(rs)) >= 7, "the blocking snapshot", 60)
        inventory.execute("DELETE FROM dbo.customers WHERE id = 1005")
        second.execute("UPDATE dbo.orders SET qty = 30 WHERE id = 1")
        runner.wait(lambda rs: any(r.value["op"] == "d" for r in _data(rs, customers))
                    and any(r.value["after"]["qty"] == 30 for r in _data(rs, orders)), "the changes after", 60)
    finally:
        runner.stop()
    records = [r for r in runner.records if r.value]
    signal = next(i for i, r in enumerate(records) if r.key == {"id": "b-3"})
    creates = [r for r in records[signal:] if r.topic == "server1"]
    insert = next(r for r in _data(records, customers) if r.value["op"] == "c")
    update = next(r for r in _data(records, orders) if r.value["op"] == "u")
    assert signal < records.index(insert) < records.index(creates[0])
    reads = {topic: [r for r in _data(records, topic) if r.value["op"] == "r"] for topic in (customers, orders)}
    assert (len(reads[customers]), len(reads[orders])) == (5, 2)
    assert {_lsns(r.value["source"]) for r in reads[customers]} == {_lsns(insert.value["source"])}
    assert {_lsns(r.value["source"]) for r in reads[orders]} == {_lsns(update.value["source"])}
    every = [*creates, *reads[customers], *reads[orders]]
    assert {r.partition["database"] for r in every} == {first}
    assert {_lsns(r.offset) for r in every} == {_lsns(insert.offset)}
    streamed = [(r.topic, r.key, r.value["op"]) for r in records if r.topic in (customers, orders)
                and r.value["op"] != "r"]
    assert sorted(streamed, key=str) == sorted([(customers, {"id": 1001}, "u"), (orders, {"id": 2}, "u"),
                                                (customers, {"id": 1005}, "c"), (customers, {"id": 1005}, "d"),
                                                (orders, {"id": 1}, "u")], key=str)
    assert _lsns(store.get({"server": "server1", "database": first})) == \
        _lsns(_data(records, customers)[-1].value["source"])
    assert _lsns(store.get({"server": "server1", "database": OTHER})) == \
        _lsns(_data(records, orders)[-1].value["source"])
