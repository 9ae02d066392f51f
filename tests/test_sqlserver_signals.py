"""Signals on the SQL Server stand-in: the signal table's change table as the source channel, incremental
snapshots (T-SQL keyset chunks, watermarks through the signal table) under concurrent writes, blocking
snapshots, stop/pause/resume, notifications."""

from __future__ import annotations

import random
import threading
import time

from cdc_core.engine import Engine
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_sqlserver.lsn import from_value
from cdc_sqlserver.standin.testing import standin  # noqa: F401  (fixture)

from incremental_replay import replay

ROWS = 1500
SIGNAL = "CREATE TABLE dbo.debezium_signal (id VARCHAR(42) NOT NULL PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))"


class _Run:
    """An Engine in a thread, its records and notifications."""

    def __init__(self, config):
        self.engine = Engine(config, offset_store=MemoryOffsetStore())
        self.records: list = []
        self.notes: list = []
        self.engine.add_notification_listener(self.notes.append)
        self.thread = threading.Thread(target=self.engine.run, args=(self.records.extend,))

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.engine.stop()
        self.thread.join(30)

    def wait(self, until, what, timeout=60.0):
        deadline = time.monotonic() + timeout
        while not until():
            assert self.thread.is_alive(), "the engine stopped"
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.05)

    def streaming(self):
        """Wait until streaming, and the initial snapshot's notifications (STARTED and COMPLETED, also for no_data:
        Debezium 2.7.4 snapshots the schema) have come; then forget them."""
        self.wait(lambda: self.engine.metrics.streaming.connected and any(
            (n.aggregate_type, n.type) == ("Initial Snapshot", "COMPLETED") for n in self.notes), "streaming")
        self.notes.clear()

    def topic(self, table):
        return [r for r in self.records if r.topic.endswith("." + table)]


def _items(standin, rows=ROWS):
    standin.create_table(SIGNAL)
    standin.create_table("CREATE TABLE dbo.items (id INT NOT NULL PRIMARY KEY, v INT NOT NULL, pad VARCHAR(10))")
    standin.execute(f"INSERT INTO dbo.items SELECT 2 * g, 0, 'x' FROM generate_series(1, {rows}) g")
    standin.enable_db()
    standin.enable_table("dbo", "items")
    standin.enable_table("dbo", "debezium_signal")
    standin.agent.start()


def _config(standin, **extra):
    return standin.properties(**{"snapshot.mode": "no_data", "table.include.list": "dbo.items",
                                 "signal.data.collection": f"{standin.dbname}.dbo.debezium_signal",
                                 "incremental.snapshot.chunk.size": 100, "poll.interval.ms": 50, **extra})


def test_incremental_snapshot_from_the_signal_table_under_concurrent_writes(standin):
    """execute-snapshot inserted into the signal table: chunks + watermarks; the replay equals the final table."""
    _items(standin)
    stop = threading.Event()
    counts = {"u": 0, "c": 0, "d": 0}

    def writer(seed):
        rnd = random.Random(seed)
        while not stop.is_set():
            key = 2 * rnd.randint(1, ROWS)
            op = rnd.random()
            if op < 0.7:
                standin.execute(f"UPDATE dbo.items SET v = v + 1 WHERE id = {key}")
                counts["u"] += 1
            elif op < 0.85:
                standin.execute(f"INSERT INTO dbo.items VALUES ({2 * ROWS + 2 * seed + 1 + 4 * counts['c']}, 0, 'n')")
                counts["c"] += 1
            else:
                standin.execute(f"DELETE FROM dbo.items WHERE id = {key}")
                counts["d"] += 1
            time.sleep(0.002)

    with _Run(_config(standin)) as run:
        run.streaming()
        writers = [threading.Thread(target=writer, args=(i,)) for i in range(2)]
        for w in writers:
            w.start()
        try:
            time.sleep(0.3)
            standin.execute("INSERT INTO dbo.debezium_signal VALUES ('ad-hoc-1', 'execute-snapshot', "
                            "'{\"data-collections\": [\"" + standin.dbname + ".dbo.items\"], \"type\": \"incremental\"}')")
            run.wait(lambda: any(n.type == "COMPLETED" for n in run.notes), "the incremental snapshot", 90)
        finally:
            stop.set()
            for w in writers:
                w.join()
        standin.execute("UPDATE dbo.items SET v = v + 1000 WHERE id = 2")
        run.wait(lambda: any(r.value and r.value["op"] == "u" and r.key["id"] == 2 and r.value["after"]["v"] >= 1000
                             for r in run.topic("items")), "the last update")
    events = run.topic("items")
    replayed, reads = replay(events)
    final = {row[0]: row[1] for row in standin.execute("SELECT id, v FROM dbo.items")}
    assert replayed == final
    assert counts["u"] > 20, counts
    assert reads >= ROWS - counts["d"] - 400, reads
    # The signal table is not in table.include.list, yet its rows are events (they used to be hidden here): as
    # Debezium 2.7.4, whose RelationalTableFilters add signal.data.collection to the table filter and whose
    # EventDispatcher emits each signal-table row after handing it to the source channel, the signal and every
    # watermark (insert_insert: an open and a close row per chunk) are create events on the signal table's topic.
    signals = [r.value for r in run.records if r.topic == f"server1.{standin.dbname}.dbo.debezium_signal"]
    assert {s["op"] for s in signals} == {"c"}
    assert (signals[0]["after"]["id"], signals[0]["after"]["type"]) == ("ad-hoc-1", "execute-snapshot")
    kinds = [s["after"]["type"] for s in signals[1:]]
    assert set(kinds) == {"snapshot-window-open", "snapshot-window-close"}
    assert kinds.count("snapshot-window-open") == kinds.count("snapshot-window-close") >= ROWS // 100
    kinds = [(n.aggregate_type, n.type) for n in run.notes]
    assert ("Incremental Snapshot", "STARTED") in kinds and ("Incremental Snapshot", "COMPLETED") in kinds
    read = next(r for r in events if r.value and r.value["op"] == "r")
    assert read.value["source"]["snapshot"] == "incremental" and read.topic == f"server1.{standin.dbname}.dbo.items"


def test_blocking_snapshot_stop_pause_and_resume_through_signals(standin, tmp_path):
    """A blocking snapshot (in-process channel) reads the table between streamed changes; an incremental one
    paused and resumed (signal table) completes; stop-snapshot (file channel) ends one that runs."""
    _items(standin, rows=300)
    signal_file = tmp_path / "signals.jsonl"
    config = _config(standin, **{"incremental.snapshot.chunk.size": 20, "signal.enabled.channels": "source,file",
                                 "signal.file": str(signal_file), "signal.poll.interval.ms": 50})
    with _Run(config) as run:
        run.streaming()
        run.engine.signal("execute-snapshot", {"data-collections": [f"{standin.dbname}.dbo.items"], "type": "blocking"})
        run.wait(lambda: len([r for r in run.topic("items") if r.value and r.value["op"] == "r"]) >= 300, "the blocking reads")
        # Named as Debezium's SQL Server TableId.identifier(): <db>.<schema>.<table>.
        items = f"{standin.dbname}.dbo.items"
        run.wait(lambda: any(n.type == "COMPLETED" for n in run.notes), "the blocking snapshot's end")
        blocking = {n.type: n.additional_data for n in run.notes if n.aggregate_type == "Initial Snapshot"}
        # Debezium 2.7.4's InitialSnapshotNotificationService: STARTED carries only connector_name; the table scan's
        # data_collections are the tables the signal names (no signal table: as the real Debezium 3.0.7 writes them,
        # tests/test_conformance_snapshot_notifications.py).
        assert blocking["STARTED"] == {"connector_name": "server1"}
        assert blocking["IN_PROGRESS"] == {"connector_name": "server1", "current_collection_in_progress": items,
                                           "data_collections": items}
        assert blocking["TABLE_SCAN_COMPLETED"] == {
            "connector_name": "server1", "scanned_collection": items, "total_rows_scanned": "300",
            "status": "SUCCEEDED", "data_collections": items}
        standin.execute("INSERT INTO dbo.items VALUES (1, 0, 'after')")
        run.wait(lambda: any(r.value and r.value["op"] == "c" for r in run.topic("items")), "the insert after it")
        reads = [r for r in run.topic("items") if r.value and r.value["op"] == "r"]
        assert reads[-1].value["source"]["snapshot"] == "last"
        assert {r.value["source"]["snapshot"] for r in reads[1:-1]} <= {"true", "last_in_data_collection"}

        # Incremental, paused after it started, resumed: it completes.
        run.notes.clear()
        standin.execute("INSERT INTO dbo.debezium_signal VALUES ('inc-2', 'execute-snapshot', "
                        "'{\"data-collections\": [\"" + standin.dbname + ".dbo.items\"]}')")
        run.wait(lambda: any(n.type == "STARTED" for n in run.notes), "the start")
        standin.execute("INSERT INTO dbo.debezium_signal VALUES ('p-1', 'pause-snapshot', NULL)")
        run.wait(lambda: any(n.type == "PAUSED" for n in run.notes), "the pause")
        standin.execute("INSERT INTO dbo.debezium_signal VALUES ('r-1', 'resume-snapshot', NULL)")
        run.wait(lambda: any(n.type == "COMPLETED" for n in run.notes), "the completion", 60)
        assert any(n.type == "RESUMED" for n in run.notes)
        named = {n.type: n.additional_data for n in run.notes}
        assert named["STARTED"]["data_collections"] == named["PAUSED"]["data_collections"] == items
        assert named["IN_PROGRESS"]["current_collection_in_progress"] == items
        assert named["TABLE_SCAN_COMPLETED"]["scanned_collection"] == items

        # Stopped while it runs: ABORTED, nothing more read after the notification.
        run.notes.clear()
        run.engine.signal("execute-snapshot", {"data-collections": [f"{standin.dbname}.dbo.items"]})
        run.wait(lambda: any(n.type == "STARTED" for n in run.notes), "the third start")
        signal_file.write_text('{"id": "stop-1", "type": "stop-snapshot", "data": {"data-collections": ["'
                               + standin.dbname + '.dbo.items"], "type": "incremental"}}\n')
        run.wait(lambda: any(n.type == "ABORTED" for n in run.notes), "the stop")
        assert next(n for n in run.notes if n.type == "ABORTED").additional_data["data_collections"] == items


def test_incremental_snapshot_of_a_composite_text_key_with_an_additional_condition(standin):
    """Keyset chunks over (VARCHAR, INT) in the expanded T-SQL form, filtered by additional-conditions."""
    standin.create_table(SIGNAL)
    standin.create_table("CREATE TABLE dbo.pairs (k VARCHAR(10) NOT NULL, n INT NOT NULL, v INT)")
    standin.execute("ALTER TABLE dbo.pairs ADD PRIMARY KEY (k, n)")  # the stand-in's T-SQL DDL has no table-level keys
    standin.execute("INSERT INTO dbo.pairs SELECT 'k' || (g % 7), g, g FROM generate_series(1, 300) g")
    standin.enable_db()
    standin.enable_table("dbo", "pairs")
    standin.enable_table("dbo", "debezium_signal")
    standin.agent.start()
    config = _config(standin, **{"table.include.list": "dbo.pairs", "incremental.snapshot.chunk.size": 25})
    with _Run(config) as run:
        run.streaming()
        run.engine.signal("execute-snapshot", {"data-collections": [f"{standin.dbname}.dbo.pairs"],
                                               "additional-conditions": [{"data-collection": f"{standin.dbname}.dbo.pairs",
                                                                          "filter": "n > 100"}]})
        # The notification can come before the last window's records reach the handler: wait for both.
        run.wait(lambda: any(n.type == "COMPLETED" for n in run.notes) and len(
            [r for r in run.topic("pairs") if r.value and r.value["op"] == "r"]) >= 200, "the incremental snapshot")
    reads = [r.value["after"] for r in run.topic("pairs") if r.value and r.value["op"] == "r"]
    assert sorted((a["k"], a["n"]) for a in reads) == sorted((f"k{g % 7}", g) for g in range(101, 301))
    assert [r.key for r in run.topic("pairs")][:1] and set(run.topic("pairs")[0].key) == {"k", "n"}


def test_ad_hoc_snapshots_read_an_included_table_without_cdc(standin):
    """As Debezium 2.7.4 (the table is in its schema from the initial snapshot): incremental and blocking."""
    _items(standin, rows=10)
    standin.create_table("CREATE TABLE dbo.plain (id INT NOT NULL PRIMARY KEY, note VARCHAR(10))")
    standin.execute("INSERT INTO dbo.plain SELECT g, 'p' || g FROM generate_series(1, 45) g")
    config = _config(standin, **{"table.include.list": "dbo.items,dbo.plain", "incremental.snapshot.chunk.size": 10})
    plain = f"{standin.dbname}.dbo.plain"

    def reads(run):
        return sorted(r.key["id"] for r in run.topic("plain") if r.value and r.value["op"] == "r")

    with _Run(config) as run:
        run.streaming()
        standin.execute("INSERT INTO dbo.debezium_signal VALUES ('inc-1', 'execute-snapshot', "
                        "'{\"data-collections\": [\"" + plain + "\"]}')")
        # The notification can come before the last window's records reach the handler: wait for both.
        run.wait(lambda: any(n.type == "COMPLETED" for n in run.notes) and len(reads(run)) >= 45,
                 "the incremental snapshot")
        assert reads(run) == list(range(1, 46))
        assert {r.value["source"]["snapshot"] for r in run.topic("plain")} == {"incremental"}
        run.records.clear()
        run.notes.clear()
        run.engine.signal("execute-snapshot", {"data-collections": [plain], "type": "blocking"})
        run.wait(lambda: len(reads(run)) >= 45, "the blocking snapshot")
        assert reads(run) == list(range(1, 46))


def test_incremental_reads_carry_the_position_of_the_watermark_that_closed_their_window(standin):
    """As Debezium 2.7.4 (a window closes while the stream dispatches the close watermark's row, and its READs
    take the stream's SqlServerOffsetContext): change_lsn/commit_lsn/event_serial_no of that row."""
    _items(standin, rows=30)
    with _Run(_config(standin, **{"incremental.snapshot.chunk.size": 10})) as run:
        run.streaming()
        standin.execute("UPDATE dbo.items SET v = 5 WHERE id = 2")
        run.wait(lambda: any(r.value and r.value["op"] == "u" for r in run.topic("items")), "the update")
        standin.execute("INSERT INTO dbo.debezium_signal VALUES ('inc-lsn', 'execute-snapshot', "
                        "'{\"data-collections\": [\"" + standin.dbname + ".dbo.items\"]}')")
        run.wait(lambda: any(n.type == "COMPLETED" for n in run.notes) and len(
            [r for r in run.topic("items") if r.value and r.value["op"] == "r"]) >= 30, "the incremental snapshot")
    update = next(r.value["source"] for r in run.topic("items") if r.value and r.value["op"] == "u")
    reads = [r.value["source"] for r in run.topic("items") if r.value and r.value["op"] == "r"]
    closes = {(str(from_value(bytes(seq))), str(from_value(bytes(commit)))) for commit, seq in standin.execute(
        'SELECT "__$start_lsn", "__$seqval" FROM cdc."dbo_debezium_signal_CT" '
        """WHERE "__$operation" = 2 AND type = 'snapshot-window-close'""")}
    positions = {(s["change_lsn"], s["commit_lsn"]) for s in reads}
    assert len(positions) == 3 and all(s["event_serial_no"] == 1 for s in reads), reads[:3]
    assert all(commit > update["commit_lsn"] for _, commit in positions)
    assert positions == closes, (positions, closes)
    # Each chunk's READs come before its close watermark's own event on the signal table's topic (Debezium's
    # dispatcher hands the row to the source channel, which emits the window's READs, then emits the row).
    marks = ["r" if r.value and r.value["op"] == "r" else r.value["after"]["type"] for r in run.records
             if (r.topic.endswith(".items") and r.value and r.value["op"] == "r")
             or (r.topic.endswith(".debezium_signal") and r.value and r.value["op"] == "c")]
    windows = "".join({"r": "r", "snapshot-window-open": "[", "snapshot-window-close": "]"}.get(m, "s") for m in marks)
    assert windows.replace("[", "") == "s" + ("r" * 10 + "]") * 3, windows  # opens may come early (read-ahead)


def test_incremental_reads_use_the_historys_structure_when_a_type_changed_without_a_new_capture_instance(
        standin, tmp_path):
    """As Debezium 2.7.4 (its chunks read with databaseSchema.tableFor, the history's table): DECIMAL(10,2) stays
    (10,2) in the READs after the catalog's column became DECIMAL(12,4) with the capture instance unchanged."""
    standin.create_table(SIGNAL)
    standin.create_table("CREATE TABLE dbo.prices (id INT NOT NULL PRIMARY KEY, amount DECIMAL(10,2))")
    standin.execute("INSERT INTO dbo.prices VALUES (1, 1.50)")
    standin.enable_db()
    standin.enable_table("dbo", "prices")
    standin.enable_table("dbo", "debezium_signal")
    standin.agent.start()
    config = _config(standin, **{"table.include.list": "dbo.prices", "snapshot.mode": "initial",
                                 "schema.history.internal.file.filename": str(tmp_path / "history.dat")})

    def parameters(record):
        return {f.name: f.schema for f in record.value_schema.field("after").schema.fields}["amount"].parameters

    with _Run(config) as run:
        run.streaming()
        standin.alter_column("dbo", "prices", "amount", "DECIMAL(12,4)")
        run.engine.signal("execute-snapshot", {"data-collections": [f"{standin.dbname}.dbo.prices"]})
        run.wait(lambda: any(r.value and r.value["source"]["snapshot"] == "incremental" for r in run.topic("prices")),
                 "the incremental snapshot")
        (read,) = [r for r in run.topic("prices") if r.value and r.value["source"]["snapshot"] == "incremental"]
        assert parameters(read) == {"scale": "2", "connect.decimal.precision": "10"}
        assert read.value["after"]["id"] == 1
        # A blocking snapshot reads the structure again (Debezium's blocking task has snapshotSchema true).
        run.records.clear()
        run.engine.signal("execute-snapshot", {"data-collections": [f"{standin.dbname}.dbo.prices"],
                                               "type": "blocking"})
        run.wait(lambda: any(r.value and r.value["op"] == "r" for r in run.topic("prices")), "the blocking snapshot")
        (read,) = [r for r in run.topic("prices") if r.value and r.value["op"] == "r"]
        assert parameters(read) == {"scale": "4", "connect.decimal.precision": "12"}


def test_the_signal_table_is_streamed_as_data_and_never_snapshotted(standin):
    """As Debezium 2.7.4: RelationalTableFilters add signal.data.collection to the table filter, so the signal
    table's rows are change events on its topic (named in table.include.list or not); the initial snapshot never
    reads its rows (determineSnapshotSelect skips the signal data collection) yet counts it among its tables, and a
    blocking snapshot naming it sends its CREATE but reads no rows of it."""
    _items(standin, rows=3)
    standin.execute("INSERT INTO dbo.debezium_signal VALUES ('old-1', 'log', '{\"message\": \"before\"}')")
    standin.wait_captured()  # in the change table before the snapshot's max LSN: streaming starts after it
    config = _config(standin, **{"snapshot.mode": "initial", "table.include.list": "dbo.items,dbo.debezium_signal"})
    with _Run(config) as run:
        run.streaming()
        standin.execute("INSERT INTO dbo.debezium_signal VALUES ('l-1', 'log', '{\"message\": \"hello\"}')")
        standin.execute("DELETE FROM dbo.debezium_signal WHERE id = 'old-1'")
        run.wait(lambda: len(run.topic("debezium_signal")) >= 3, "the signal table's changes")
        values = run.engine.metrics.values()
        # A blocking snapshot naming it: its CREATE (after the other's: the include list's order), no rows.
        initial = list(run.records)
        run.records.clear()
        run.engine.signal("execute-snapshot", {"type": "blocking", "data-collections": [
            f"{standin.dbname}.dbo.debezium_signal", f"{standin.dbname}.dbo.items"]})
        run.wait(lambda: len([r for r in run.topic("items") if r.value["op"] == "r"]) >= 3, "the blocking snapshot")
    creates = [r.value["tableChanges"][0]["id"] for r in run.records if r.topic == "server1"]
    assert creates == [f'"{standin.dbname}"."dbo"."items"', f'"{standin.dbname}"."dbo"."debezium_signal"']
    assert [r.value["source"]["snapshot"] for r in run.topic("items")] == ["first", "true", "last"]
    assert run.topic("debezium_signal") == []
    run.records[:] = initial  # the initial snapshot and the streamed rows
    snapshot, task = values[f"snapshot,database={standin.dbname}"], values["snapshot"]
    assert sorted(r.key["id"] for r in run.topic("items") if r.value["op"] == "r") == [2, 4, 6]
    assert [(r.key["id"], r.value and r.value["op"]) for r in run.topic("debezium_signal")] == [
        ("l-1", "c"), ("old-1", "d"), ("old-1", None)]
    assert run.topic("debezium_signal")[0].value["source"]["snapshot"] == "false"
    assert (snapshot["TotalTableCount"], snapshot["RemainingTableCount"]) == (2, 0)
    assert snapshot["RowsScanned"] == {"dbo.items": 3, "dbo.debezium_signal": 0}
    # The task-level group shows the initial snapshot too (one database: the same tables and counts).
    assert (task["TotalTableCount"], task["RemainingTableCount"], task["SnapshotCompleted"]) == (2, 0, True)
    assert task["RowsScanned"] == snapshot["RowsScanned"] and task["SnapshotRunning"] is False
