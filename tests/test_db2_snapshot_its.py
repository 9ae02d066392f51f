"""Debezium 2.7.4's Db2 IncrementalSnapshotIT, BlockingSnapshotIT and NotificationsIT on the stand-in.

Their expectations come from debezium-embedded's AbstractIncrementalSnapshotTest, AbstractSnapshotTest,
AbstractBlockingSnapshotTest and AbstractNotificationsIT, with the Db2 subclasses' settings: tables ``DB2INST1.A``
and ``B`` (``pk`` INT key, ``aa`` INT), ``A42`` (four key-less columns keyed by ``message.key.columns``), the signal
table ``DB2INST1.DEBEZIUM_SIGNAL`` (no key) in capture mode, topic prefix ``testdb``, ``include.schema.changes``
false (TestHelper.defaultConfig). The cases that form a table are in ``data/db2_snapshot_its.yaml``.

Not ported, because the stand-in (or cdc) has no such thing: the JMX notification channel (cdc has no JVM; its
in-process counterpart, ``Engine.add_notification_listener``, is checked instead, without the MBean's ``reset``),
``insertsWithKafkaSnapshotSignal``'s Kafka signal channel (Debezium's test sends the signal row anyway; the case
is in the table), and ``readsSchemaOnlyForSignaledTables`` / ``snapshotPreceededBySchemaChange``, which Debezium
itself skips for Db2 (@SkipWhenConnectorUnderTest DB2, DBZ-4350).
"""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from kit.engine import EngineThread

from cdc_core.errors import ConfigError
from cdc_core.stores.memory_history import MemorySchemaHistoryStore
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_db2.standin.testing import standin  # noqa: F401  (fixture)

DATA = yaml.safe_load((Path(__file__).parent / "data" / "db2_snapshot_its.yaml").read_text())
ROW_COUNT = 1000
S = "DB2INST1"
SIGNAL = "DB2INST1.DEBEZIUM_SIGNAL"
NOTIFICATIONS = "io.debezium.notification"
TABLE = [("PK", "INTEGER NOT NULL"), ("AA", "INTEGER")]


# -- the database, as the ITs' before() and populate*() leave it ------------------------------------------

@pytest.fixture
def db(standin):
    """IncrementalSnapshotIT.before(): A, B, A42 and the signal table; only the signal table in capture mode."""
    standin.create_table(S, "A", TABLE, key=["PK"])
    standin.create_table(S, "B", TABLE, key=["PK"])
    standin.create_table(S, "A42", [("PK1", "INTEGER"), ("PK2", "INTEGER"), ("PK3", "INTEGER"), ("PK4", "INTEGER"),
                                    ("AA", "INTEGER")])
    standin.create_table(S, "DEBEZIUM_SIGNAL", [("ID", "VARCHAR(64)"), ("TYPE", "VARCHAR(32)"),
                                                ("DATA", "VARCHAR(2048)")])
    standin.add_table(S, "DEBEZIUM_SIGNAL")
    standin.agent.start()
    return standin


def populate(db, what: str) -> None:
    """AbstractSnapshotTest's populate*: rows first, then the table enters capture mode (the Db2 overrides)."""
    if what in ("A", "B"):
        insert(db, what, 0, ROW_COUNT)
        db.add_table(S, what)
    elif what == "B_plain":  # populateTable(String): not overridden by the Db2 IT, so not in capture mode
        insert(db, "B", 0, ROW_COUNT)
    elif what == "A42":
        db.execute(f'INSERT INTO "{S}"."A42" SELECT g / 1000, (g / 100) % 10, (g / 10) % 10, g % 10, g - 1 '
                   f"FROM generate_series(1, {ROW_COUNT}) g")
        db.add_table(S, "A42")
    elif what == "A42_nulls":
        rows = [(None if p1 == 10 else p1, None if p2 == 1 else p2, p1 + p2) for p1 in (10, 20, 30) for p2 in (1, 2, 3)]
        with_nulls = ", ".join(f"({'NULL' if a is None else a}, {'NULL' if b is None else b}, 0, 0, {v})"
                               for a, b, v in rows)
        db.execute(f'INSERT INTO "{S}"."A42" VALUES {with_nulls}')
        db.add_table(S, "A42")
    elif what.startswith("specific"):  # populateTableWithSpecificValue(2000, count, 12345678)
        count = int(what.removeprefix("specific"))
        db.execute(f'INSERT INTO "{S}"."A" SELECT {count} + g, 12345678 FROM generate_series(2001, {2000 + count}) g')
    else:
        raise ValueError(what)


def insert(db, table: str, start: int, count: int) -> None:
    """Rows pk ``start+1..start+count`` with aa ``pk - 1``, in one transaction."""
    db.execute(f'INSERT INTO "{S}"."{table}" SELECT g + 1, g FROM generate_series({start}, {start + count - 1}) g')


def signal(db, signal_id: str, kind: str, data: str) -> None:
    """A row in the signal table, as the ITs insert it (``data`` is the JSON text, '' for pause/resume)."""
    db.execute(f'INSERT INTO "{S}"."DEBEZIUM_SIGNAL" VALUES (%s, %s, %s)', (signal_id, kind, data))


def config(db, **extra: Any) -> dict[str, Any]:
    """IncrementalSnapshotIT.config() on TestHelper.defaultConfig()."""
    return db.properties("testdb", **{
        "snapshot.mode": "no_data", "signal.data.collection": SIGNAL, "incremental.snapshot.chunk.size": 250,
        "message.key.columns": "DB2INST1.A42:pk1,pk2,pk3,pk4", "include.schema.changes": "false",
        "poll.interval.ms": 50, **extra})


# -- consuming, as consumeMixedWithIncrementalSnapshot --------------------------------------------------

KEYS = {
    "pk": lambda k: k["PK"],
    "pk4": lambda k: k["PK1"] * 1000 + k["PK2"] * 100 + k["PK3"] * 10 + k["PK4"],
    "pk2_nulls": lambda k: (10 if k["PK1"] is None else k["PK1"]) + (1 if k["PK2"] is None else k["PK2"]),
}


def changes(records: list, topic: str, key: str = "pk") -> dict[int, int]:
    """Each key's latest ``aa`` on ``topic`` (deletes and tombstones left out), as dbChanges."""
    out: dict[int, int] = {}
    for r in records:
        if r.topic == topic and r.value and r.value.get("after") is not None:
            out[KEYS[key](r.key)] = r.value["after"]["AA"]
    return out


class Restarts:
    """An engine that can be stopped and started again on the same offsets and history, its records all kept."""

    def __init__(self, cfg: dict[str, Any], slow: float = 0.0):
        self.config = cfg
        #: Seconds the handler sleeps per batch: a consumer slower than the stand-in's snapshot, so a restart lands
        #: in its middle (as the ITs' record-by-record consumer does against a real Db2).
        self.slow = slow
        self.offsets, self.history = MemoryOffsetStore(), MemorySchemaHistoryStore()
        self.runs: list[EngineThread] = []
        self.notes: list[Any] = []
        self.start()

    def start(self, cfg: dict[str, Any] | None = None) -> None:
        """Start an engine (``cfg``, else the first configuration) on the stores; return once it streams."""
        runner = EngineThread(cfg or self.config, offsets=self.offsets, history=self.history)
        runner.engine.add_notification_listener(self.notes.append)  # before the start: the snapshot's too
        runner.slow = self.slow
        self.runs.append(runner.start())
        try:
            runner.wait_streaming(60)
        except BaseException:
            runner.stop()
            raise

    def stop(self) -> None:
        """Stop the current engine."""
        self.runs[-1].stop()

    def restart(self) -> None:
        """Stop, then start again on the same configuration and stores."""
        self.stop()
        self.start()

    @property
    def current(self) -> EngineThread:
        return self.runs[-1]

    def records(self) -> list:
        """Every run's records, in order."""
        return [r for run in self.runs for r in run.snapshot()]

    def wait(self, done, what: str, timeout: float = 90) -> None:
        """Wait until ``done(every record)`` while the current engine runs."""
        self.current.wait(lambda _: done(self.records()), what, timeout)


def _during(db, what: str | None) -> None:
    """The case's writes after the signal (the YAML's ``during``)."""
    if what == "inserts":
        insert(db, "A", ROW_COUNT, ROW_COUNT)
    elif what == "updates":  # a transaction per 10 keys (only the first 100 find rows)
        for i in range(ROW_COUNT // 10):
            db.execute(f'UPDATE "{S}"."A" SET "AA" = "AA" + 2000 WHERE "PK" > {i * 10} AND "PK" <= {(i + 1) * 10}')
    elif what == "update_all":
        db.execute(f'UPDATE "{S}"."A" SET "AA" = "AA" + 2000')


def _value(expression: str, k: int) -> int:
    """The YAML's expected value of key ``k``."""
    return int(eval(str(expression), {}, {"k": k}))  # noqa: S307 - the YAML's own arithmetic on k


@pytest.mark.parametrize("case", list(DATA["incremental"]), ids=list(DATA["incremental"]))
def test_incremental_snapshot(db, case):
    """One case of the YAML's ``incremental`` table: every key's final value on the topic, and what the case adds."""
    spec = DATA["incremental"][case]
    for what in spec["populate"]:
        populate(db, what)
    db.wait_captured()  # waitForCdcTransactionPropagation: the rows are before the position no_data streams from
    expect = spec["expect"]
    topic = f"testdb.DB2INST1.{expect.get('topic', 'A')}"
    # A restart in the middle: on the stand-in, whose capture is quick, a 1000-row table in chunks of 250 is read and
    # its windows closed within one capture round (cdc reads up to 4 chunks ahead of the stream), so the restart
    # cases read in chunks of 50 and consume slowly, to land where the ITs' restart lands against a real Db2.
    restart = {"max.batch.size": 50, "max.queue.size": 100, "incremental.snapshot.chunk.size": 50} \
        if spec.get("restart") else {}
    run = Restarts(config(db, **spec.get("config", {}), **restart), slow=0.02 if restart else 0.0)
    try:
        # startConnector(): no_data, so nothing but the stream (no row of the tables).
        time.sleep(0.3)
        assert not [r for r in run.records() if r.value and r.value.get("op") == "r"]
        signal(db, "ad-hoc", "execute-snapshot", spec["signal"])
        writer = threading.Thread(target=_during, args=(db, spec.get("during")))
        writer.start()  # the test's writes go on while the records are consumed (and the connector restarted)
        if spec.get("restart"):
            run.wait(lambda rs: len([r for r in rs if r.topic == topic]) > 50, "more than 50 records")
            run.restart()
        writer.join(60)
        until = expect.get("until")

        def done(rs: list) -> bool:
            got = changes(rs, topic, expect.get("key", "pk"))
            return len(got) >= expect["count"] and (until is None or all(v >= until for v in got.values()))

        run.wait(done, f"{expect['count']} keys on {topic}")
        time.sleep(expect.get("quiet", 0))  # consumeRecordsByTopic(1, 1): whether anything more comes
    finally:
        run.stop()
    records = run.records()
    got = changes(records, topic, expect.get("key", "pk"))
    assert len(got) == expect["count"]
    assert all(v == _value(expect["value"], k) for k, v in got.items()), sorted(got.items())[:5]
    reads = [r for r in records if r.topic == topic and r.value and r.value.get("op") == "r"]
    assert {r.value["source"]["snapshot"] for r in reads} <= {"incremental"}
    assert reads or spec.get("during")  # (a change in a READ's window supersedes it: updates may leave none)
    if "reads" in expect:
        assert len(reads) == expect["reads"]
    if spec.get("restart"):
        # Stopped in the middle, resumed from the offsets' progress: the second run reads the rest, not all again.
        first, second = (_reads(run.runs[i].snapshot(), topic) for i in (0, 1))
        assert len(first) < expect["count"] and second
        assert len(first) + len(second) <= expect["count"] + 4 * 50  # at most the windows open at the stop again
    if "window_close_rows" in expect:
        closes = db.execute(f'SELECT count("ID") FROM "{S}"."DEBEZIUM_SIGNAL" WHERE "TYPE" = \'snapshot-window-close\'')
        assert (closes[0][0] != 0) is expect["window_close_rows"]
    # Debezium keeps the entries that name no table and reports each as UNKNOWN_SCHEMA (isTableInvalid); the signal
    # is never refused.
    unknown = [n.additional_data["scanned_collection"] for n in run.notes
               if n.type == "TABLE_SCAN_COMPLETED" and n.additional_data["status"] == "UNKNOWN_SCHEMA"]
    assert sorted(unknown) == expect.get("unknown_schema", [])
    assert not [n for n in run.notes if n.aggregate_type == "Signal"]


def _reads(records: list, topic: str = "testdb.DB2INST1.A") -> list:
    return [r for r in records if r.topic == topic and r.value and r.value.get("op") == "r"]


def _incremental(notes: list, type_: str | None = None) -> list:
    return [n for n in notes if n.aggregate_type == "Incremental Snapshot" and (type_ is None or n.type == type_)]


def test_multiple_tables_and_a_restart_process_only_what_was_not_processed(db):
    """whenSnapshotMultipleTablesAndConnectorRestartsThenOnlyNotAlreadyProcessedTableMustBeProcessed (DBZ-7716):
    A and B, chunks of 200, a restart once more than 150 of B's records came: both complete, A is not read again."""
    populate(db, "A")
    populate(db, "B")
    db.wait_captured()
    run = Restarts(config(db, **{"incremental.snapshot.chunk.size": 200}))
    try:
        signal(db, "ad-hoc", "execute-snapshot",
               '{"type": "INCREMENTAL","data-collections": ["DB2INST1.A", "DB2INST1.B"]}')
        run.wait(lambda rs: len(_reads(rs, "testdb.DB2INST1.B")) > 150, "more than 150 of B's records")
        run.restart()
        run.wait(lambda rs: len(changes(rs, "testdb.DB2INST1.A")) >= ROW_COUNT
                 and len(changes(rs, "testdb.DB2INST1.B")) >= ROW_COUNT, "both tables")
        time.sleep(0.5)
    finally:
        run.stop()
    records = run.records()
    for table in ("A", "B"):
        assert changes(records, f"testdb.DB2INST1.{table}") == {k: k - 1 for k in range(1, ROW_COUNT + 1)}
    assert len(_reads(records)) == ROW_COUNT
    assert not _reads(run.runs[1].snapshot())


def test_regex_naming_no_table_completes_without_reading(db):
    """snapshotWithRegexDataCollectionsNotExist: ".*notExist" is kept and found invalid; the snapshot ends (Debezium
    logs "Skipping read chunk because snapshot is not running"): STARTED, UNKNOWN_SCHEMA, COMPLETED, no READ."""
    populate(db, "A")
    db.wait_captured()
    run = Restarts(config(db))
    try:
        signal(db, "ad-hoc", "execute-snapshot", '{"type": "INCREMENTAL","data-collections": [".*notExist"]}')
        run.wait(lambda rs: _incremental(run.notes, "COMPLETED"), "the snapshot's end")
    finally:
        run.stop()
    assert [(n.type, n.additional_data.get("status")) for n in _incremental(run.notes)] == [
        ("STARTED", None), ("TABLE_SCAN_COMPLETED", "UNKNOWN_SCHEMA"), ("COMPLETED", None)]
    assert _incremental(run.notes)[0].additional_data["data_collections"] == ".*notExist"
    assert not _reads(run.records())


@pytest.mark.parametrize("collections", [[], ["DB2INST1.A"]], ids=["WithoutCollections", "WithAllCollections"])
def test_stop_current_incremental_snapshot_and_take_a_new_one_after_restart(db, collections):
    """stopCurrentIncrementalSnapshot{WithoutCollections,WithAllCollections}AndTakeNewNewIncrementalSnapshotAfterRestart
    (DBZ-4271): chunks of 1, stop-snapshot once it runs; after a restart no snapshot is in progress, and a new one
    with 1000 inserts meanwhile gives every row."""
    populate(db, "A")
    db.wait_captured()
    run = Restarts(config(db, **{"incremental.snapshot.chunk.size": 1}))
    try:
        signal(db, "ad-hoc", "execute-snapshot", '{"type": "INCREMENTAL","data-collections": ["DB2INST1.A"]}')
        run.wait(lambda rs: _reads(rs), "the snapshot's first READ")
        listed = "" if not collections else ',"data-collections": ' + json.dumps(collections)
        signal(db, "ad-hoc", "stop-snapshot", '{"type": "INCREMENTAL"' + listed + "}")
        run.wait(lambda rs: _incremental(run.notes, "ABORTED"), "the stop")
        (aborted,) = _incremental(run.notes, "ABORTED")
        assert aborted.additional_data == {"data_collections": "DB2INST1.A", "connector_name": "testdb"}
        time.sleep(0.5)
        stopped_at = len(_reads(run.records()))
        assert stopped_at < ROW_COUNT
        db.execute(f'INSERT INTO "{S}"."A" VALUES ({2 * ROW_COUNT + 1}, {2 * ROW_COUNT})')
        run.wait(lambda rs: 2 * ROW_COUNT + 1 in changes(rs, "testdb.DB2INST1.A"), "the insert")
        assert len(_reads(run.records())) == stopped_at  # nothing read after the stop
        run.stop()
        assert "incremental_snapshot" not in (run.offsets.get({"server": "testdb"}) or {})
        run.start(config(db))  # startConnector(): the default chunk size
        time.sleep(0.3)
        assert not _reads(run.current.snapshot())  # "No incremental snapshot in progress"
        signal(db, "ad-hoc", "execute-snapshot", '{"type": "INCREMENTAL","data-collections": ["DB2INST1.A"]}')
        insert(db, "A", ROW_COUNT, ROW_COUNT)
        run.wait(lambda rs: len(changes(rs, "testdb.DB2INST1.A")) >= 2 * ROW_COUNT + 1, "every row")
    finally:
        run.stop()
    assert changes(run.records(), "testdb.DB2INST1.A") == {k: k - 1 for k in range(1, 2 * ROW_COUNT + 2)}


@pytest.mark.parametrize("removed,kept", [("B", "A"), ("A", "B")],
                         ids=["removeNotYetCapturedCollection", "removeStartedCapturedCollection"])
def test_remove_a_collection_from_an_in_progress_incremental_snapshot(db, removed, kept):
    """remove{NotYetCaptured,StartedCaptured}CollectionFromInProgressIncrementalSnapshot (DBZ-4271): A and B, chunks
    of 250, the stop for one sent right after the start; the other gets its rows and 1000 inserts, the removed one
    no READ after its ABORTED."""
    populate(db, "A")
    populate(db, "B")
    db.wait_captured()
    run = Restarts(config(db))
    try:
        signal(db, "ad-hoc", "execute-snapshot",
               '{"type": "INCREMENTAL","data-collections": ["DB2INST1.A", "DB2INST1.B"]}')
        signal(db, "ad-hoc", "stop-snapshot", '{"type": "INCREMENTAL","data-collections": ["DB2INST1.%s"]}' % removed)
        run.wait(lambda rs: _incremental(run.notes, "ABORTED"), "the removal")
        assert _incremental(run.notes, "ABORTED")[0].additional_data["data_collections"] == f"DB2INST1.{removed}"
        aborted_at = len(_reads(run.records(), f"testdb.DB2INST1.{removed}"))
        insert(db, kept, ROW_COUNT, ROW_COUNT)
        run.wait(lambda rs: len(changes(rs, f"testdb.DB2INST1.{kept}")) >= 2 * ROW_COUNT, f"{kept}'s rows")
        run.wait(lambda rs: _incremental(run.notes, "COMPLETED"), "the snapshot's end")
    finally:
        run.stop()
    records = run.records()
    assert changes(records, f"testdb.DB2INST1.{kept}") == {k: k - 1 for k in range(1, 2 * ROW_COUNT + 1)}
    assert len(_reads(records, f"testdb.DB2INST1.{removed}")) == aborted_at < ROW_COUNT


def test_newly_added_table_to_include_list_is_snapshotted_after_restart(db):
    """shouldSnapshotNewlyAddedTableToIncludeListAfterRestart (DBZ-4834): initial snapshot of B only, restart with
    A added to table.include.list, an incremental snapshot of A gives its rows."""
    populate(db, "A")
    populate(db, "B")
    db.wait_captured()
    mutable = {"snapshot.mode": "initial", "schema.history.internal.store.only.captured.tables.ddl": "false"}
    run = Restarts(config(db, **mutable, **{"table.include.list": "DB2INST1.B"}))
    try:
        run.wait(lambda rs: len(_reads(rs, "testdb.DB2INST1.B")) >= ROW_COUNT, "B's initial snapshot")
        run.stop()
        run.start(config(db, **mutable, **{"table.include.list": "DB2INST1.A,DB2INST1.B"}))
        signal(db, "ad-hoc", "execute-snapshot", '{"type": "INCREMENTAL","data-collections": ["DB2INST1.A"]}')
        run.wait(lambda rs: len(changes(rs, "testdb.DB2INST1.A")) >= ROW_COUNT, "A's rows")
    finally:
        run.stop()
    assert changes(run.records(), "testdb.DB2INST1.A") == {k: k - 1 for k in range(1, ROW_COUNT + 1)}
    assert not _reads(run.runs[1].snapshot(), "testdb.DB2INST1.B")


#: A consumer slower than the stand-in (with ``slow``): the stream, held back by a full queue, closes no window ahead of
#: what the test consumed, so the reader (at most 4 chunks ahead of the stream) cannot finish the table before a pause.
SLOW = {"max.batch.size": 50, "max.queue.size": 100}


def _pause(db) -> None:
    """The pause signal, with the capture held meanwhile: cdc reads up to 4 chunks ahead of the stream, and on the
    stand-in's quick capture the whole table would be read (so nothing left to pause) before the signal row reaches
    the stream; held, at most those chunks are read before the pause, as on a Db2 whose asncap takes its time."""
    db.agent.stop()
    signal(db, "test-pause", "pause-snapshot", "")
    db.agent.start()


def test_pause_during_snapshot(db):
    """testPauseDuringSnapshot: chunks of 50; pause after 100 records, resume: the rest comes, in key order; while
    paused (once the windows already read have closed) no READ comes."""
    populate(db, "A")
    db.wait_captured()
    run = Restarts(config(db, **SLOW, **{"incremental.snapshot.chunk.size": 50}), slow=0.02)
    try:
        signal(db, "ad-hoc", "execute-snapshot", '{"type": "INCREMENTAL","data-collections": ["DB2INST1.A"]}')
        run.wait(lambda rs: len(_reads(rs)) >= 100, "100 records")
        _pause(db)
        run.wait(lambda rs: _incremental(run.notes, "PAUSED"), "the pause")
        before = -1
        while before != len(_reads(run.records())):
            before = len(_reads(run.records()))
            time.sleep(0.5)
        assert before < ROW_COUNT
        signal(db, "test-resume", "resume-snapshot", "")
        run.wait(lambda rs: len(changes(rs, "testdb.DB2INST1.A")) >= ROW_COUNT, "the rest")
    finally:
        run.stop()
    reads = _reads(run.records())
    assert [r.key["PK"] for r in reads] == list(range(1, ROW_COUNT + 1))
    assert [r.value["after"]["AA"] for r in reads] == list(range(ROW_COUNT))


SINK = {"notification.enabled.channels": "sink", "notification.sink.topic.name": NOTIFICATIONS}


def _sink(records: list) -> list[dict[str, Any]]:
    return [r.value for r in records if r.topic == NOTIFICATIONS]


def test_incremental_snapshot_notifications(db):
    """testNotification, with Debezium's exact fields: chunks of 100 (the Db2 IT's defaultIncrementalSnapshotChunkSize),
    sink channel; pause and resume after 100 records. IncrementalSnapshotNotificationService sends STARTED/PAUSED/
    RESUMED with data_collections, IN_PROGRESS with current_collection_in_progress, maximum_key and last_processed_key
    (first key values) after every chunk read, TABLE_SCAN_COMPLETED with scanned_collection, total_rows_scanned and
    status, COMPLETED with nothing but connector_name; every id the signal's."""
    populate(db, "A")
    db.wait_captured()
    run = Restarts(config(db, **SINK, **SLOW, **{"incremental.snapshot.chunk.size": 100}), slow=0.02)
    try:
        signal(db, "ad-hoc", "execute-snapshot", '{"type": "INCREMENTAL","data-collections": ["DB2INST1.A"]}')
        run.wait(lambda rs: len(_reads(rs)) >= 100, "100 records")
        _pause(db)
        run.wait(lambda rs: any(n["type"] == "PAUSED" for n in _sink(rs)), "the pause")
        signal(db, "test-resume", "resume-snapshot", "")
        run.wait(lambda rs: any(n["type"] == "COMPLETED" and n["aggregate_type"] == "Incremental Snapshot"
                                for n in _sink(rs)), "the snapshot's end")
        run.wait(lambda rs: len(_reads(rs)) >= ROW_COUNT, "every READ")
    finally:
        run.stop()
    records = run.records()
    assert [r.value["after"]["AA"] for r in records if r.topic == "testdb.DB2INST1.A"] == list(range(ROW_COUNT))
    sink = [n for n in _sink(records) if n["aggregate_type"] == "Incremental Snapshot"]
    types = [n["type"] for n in sink]
    assert types[0] == "STARTED" and types[-2:] == ["TABLE_SCAN_COMPLETED", "COMPLETED"]
    assert {"PAUSED", "RESUMED", "IN_PROGRESS"} <= set(types) and types.index("PAUSED") < types.index("RESUMED")
    assert types.count("IN_PROGRESS") == 10  # one per chunk of 100 rows read, the last one too
    assert {n["id"] for n in sink} == {"ad-hoc"}
    fields = {t: [n["additional_data"] for n in sink if n["type"] == t] for t in set(types)}
    named = {"connector_name": "testdb", "data_collections": "DB2INST1.A"}
    assert fields["STARTED"] == fields["PAUSED"] == fields["RESUMED"] == [named]
    assert fields["IN_PROGRESS"] == [{**named, "current_collection_in_progress": "DB2INST1.A", "maximum_key": "1000",
                                      "last_processed_key": str(100 * i)} for i in range(1, 11)]
    assert fields["TABLE_SCAN_COMPLETED"] == [{**named, "scanned_collection": "DB2INST1.A",
                                               "total_rows_scanned": "1000", "status": "SUCCEEDED"}]
    assert fields["COMPLETED"] == [{"connector_name": "testdb"}]
    # no_data's schema-only snapshot before (Debezium's snapshot task with schema and no data): STARTED, COMPLETED.
    assert [(n["type"], n["additional_data"]) for n in _sink(records) if n["aggregate_type"] == "Initial Snapshot"] == [
        ("STARTED", {"connector_name": "testdb"}), ("COMPLETED", {"connector_name": "testdb"})]
    # The sink records: Debezium's notification key and value (the SchemaFactory's names).
    record = next(r for r in records if r.topic == NOTIFICATIONS)
    assert record.key == {"id": record.value["id"]}
    assert record.key_schema.name == "io.debezium.connector.common.NotificationKey"
    assert record.value_schema.name == "io.debezium.connector.common.Notification"
    assert [f.name for f in record.value_schema.fields] == ["id", "type", "aggregate_type", "additional_data",
                                                            "timestamp"]


# -- BlockingSnapshotIT ---------------------------------------------------------------------------------

def blocking_config(db, **extra: Any) -> dict[str, Any]:
    """BlockingSnapshotIT.config(): initial, the signal table, snapshot.include.collection.list A, chunks of 250."""
    return db.properties("testdb", **{
        "snapshot.mode": "initial", "signal.data.collection": SIGNAL, "snapshot.include.collection.list": "DB2INST1.A",
        "incremental.snapshot.chunk.size": 250, "include.schema.changes": "false", "poll.interval.ms": 50, **extra})


def _initial(notes: list, type_: str) -> list:
    return [n for n in notes if n.aggregate_type == "Initial Snapshot" and n.type == type_]


def _values(records: list, topic: str = "testdb.DB2INST1.A") -> list[int]:
    return [r.value["after"]["AA"] for r in records if r.topic == topic and r.value]


@pytest.mark.parametrize("case", list(DATA["blocking"]), ids=list(DATA["blocking"]))
def test_blocking_snapshot(db, case):
    """executeBlockingSnapshot[WithEscapedCollectionName]: the initial snapshot and 1000 streamed inserts, the
    blocking snapshot's 2000 rows (and the signal row's own event), then 1000 streamed inserts."""
    populate(db, "A")
    db.wait_captured()
    run = Restarts(blocking_config(db))
    try:
        run.wait(lambda rs: _initial(run.notes, "COMPLETED") and len(_reads(rs)) >= ROW_COUNT, "the initial snapshot")
        insert(db, "A", ROW_COUNT, ROW_COUNT)
        run.wait(lambda rs: len(_values(rs)) >= 2 * ROW_COUNT, "the streamed inserts")
        first = run.records()
        signal(db, "ad-hoc", "execute-snapshot", DATA["blocking"][case]["signal"])
        run.wait(lambda rs: len(_initial(run.notes, "COMPLETED")) >= 2 and len(rs) >= len(first) + 2 * ROW_COUNT + 1,
                 "the blocking snapshot")
        second = run.records()
        insert(db, "A", 2 * ROW_COUNT, ROW_COUNT)
        run.wait(lambda rs: len(_values(rs)) >= 5 * ROW_COUNT, "the inserts after it")
        time.sleep(0.5)
    finally:
        run.stop()
    records = run.records()
    data = [r for r in first if r.value and r.topic.startswith("testdb.DB2INST1.")]
    assert len(_values(data)) == 2 * ROW_COUNT and set(range(2 * ROW_COUNT - 1)) <= set(_values(data))
    # consumeRecordsByTopic(ROW_COUNT * 2 + 1): the signal row's create event and the table again.
    snapshot = [r for r in second[len(first):] if r.value and r.topic.startswith("testdb.DB2INST1.")]
    assert [(r.topic, r.value["op"]) for r in snapshot if r.topic.endswith("DEBEZIUM_SIGNAL")] == [
        ("testdb.DB2INST1.DEBEZIUM_SIGNAL", "c")]
    assert len(_values(snapshot)) == 2 * ROW_COUNT and set(range(2 * ROW_COUNT - 1)) <= set(_values(snapshot))
    assert {r.value["op"] for r in snapshot if r.topic == "testdb.DB2INST1.A"} == {"r"}
    streamed = [r for r in records[len(second):] if r.value and r.topic == "testdb.DB2INST1.A"]
    assert len(streamed) == ROW_COUNT and set(range(2 * ROW_COUNT, 3 * ROW_COUNT - 1)) <= set(_values(streamed))


def test_blocking_snapshot_while_streaming(db):
    """executeBlockingSnapshotWhileStreaming: inserts one by one with random sleeps, a blocking snapshot among them;
    then 1000 more. The topic has the initial snapshot, every insert once as a change, and the blocking snapshot's
    rows (RowsScanned of it), nothing lost, nothing else repeated."""
    populate(db, "A")
    db.wait_captured()
    run = Restarts(blocking_config(db))
    errors: list[BaseException] = []

    def inserts() -> None:
        try:
            rnd = random.Random(7)
            for i in range(ROW_COUNT):
                db.execute(f'INSERT INTO "{S}"."A" VALUES ({ROW_COUNT + i + 1}, {ROW_COUNT + i})')
                time.sleep(rnd.randint(1, 5) / 1000)  # insertMaxSleep: Db2's 100 ms made quicker
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    writer = threading.Thread(target=inserts)
    try:
        run.wait(lambda rs: _initial(run.notes, "COMPLETED") and len(_reads(rs)) >= ROW_COUNT, "the initial snapshot")
        writer.start()
        time.sleep(1.0)
        before = len(run.records())
        signal(db, "ad-hoc", "execute-snapshot", '{"type": "BLOCKING","data-collections": ["DB2INST1.A"]}')
        run.wait(lambda rs: len(_initial(run.notes, "COMPLETED")) >= 2, "the blocking snapshot")
        total = run.current.engine.metrics.values()["snapshot"]["RowsScanned"]["DB2INST1.A"]
        writer.join(120)
        assert not errors
        insert(db, "A", 2 * ROW_COUNT, ROW_COUNT)
        run.wait(lambda rs: len(_values(rs)) >= 3 * ROW_COUNT + total, "everything")
        time.sleep(0.5)
    finally:
        run.stop()
    records = run.records()
    values = _values(records)
    assert len(values) == 3 * ROW_COUNT + total
    blocking = _reads(records[before:])
    assert len(blocking) == total and ROW_COUNT < total <= 2 * ROW_COUNT
    assert sorted(v for r in records if r.topic == "testdb.DB2INST1.A" and r.value and r.value["op"] == "c"
                  for v in [r.value["after"]["AA"]]) == list(range(ROW_COUNT, 3 * ROW_COUNT))
    assert sorted(r.value["after"]["AA"] for r in blocking) == list(range(total))


@pytest.mark.parametrize("table", ["B", "A"], ids=["executeBlockingSnapshotWithAdditionalCondition",
                                                  "streamingMetricsResumeAfterBlockingSnapshot"])
def test_blocking_snapshot_with_additional_condition(db, table):
    """executeBlockingSnapshotWithAdditionalCondition: B (filled, not in capture mode, as the IT's populateTable(B))
    read with "SELECT * FROM DB2INST1.B WHERE aa < 500": 500 rows and the signal row's event.
    streamingMetricsResumeAfterBlockingSnapshot (DBZ-8238): the same on A, then 1000 inserts: the streaming metric
    TotalNumberOfCreateEventsSeen counts them and the signal row (1001)."""
    populate(db, "A" if table == "A" else "B_plain")
    db.wait_captured()
    run = Restarts(blocking_config(db))
    try:
        initial = ROW_COUNT if table == "A" else 0  # (the listener hears COMPLETED before the handler has the rows)
        run.wait(lambda rs: _initial(run.notes, "COMPLETED") and len(_reads(rs)) >= initial, "the initial snapshot")
        start = len(run.records())
        created = run.current.engine.metrics.values()["streaming"]["TotalNumberOfCreateEventsSeen"]
        condition = f"SELECT * FROM DB2INST1.{table} WHERE aa < 500"
        signal(db, "ad-hoc", "execute-snapshot", json.dumps({
            "type": "BLOCKING", "data-collections": [f"DB2INST1.{table}"],
            "additional-conditions": [{"data-collection": f"DB2INST1.{table}", "filter": condition}]}))
        run.wait(lambda rs: len(_initial(run.notes, "COMPLETED")) >= 2 and len(rs) >= start + 501, "the blocking one")
        after = run.records()[start:]
        if table == "A":
            insert(db, "A", ROW_COUNT, ROW_COUNT)
            metric = lambda: run.current.engine.metrics.values()["streaming"]["TotalNumberOfCreateEventsSeen"]  # noqa: E731
            run.wait(lambda rs: metric() - created >= ROW_COUNT + 1, "the inserts counted")
            time.sleep(0.5)
            assert metric() - created == ROW_COUNT + 1
    finally:
        run.stop()
    assert sorted(_values(after, f"testdb.DB2INST1.{table}")) == list(range(500))
    assert [r.topic for r in after if r.value and r.topic.startswith("testdb.") and r.value["op"] != "r"] == [
        "testdb.DB2INST1.DEBEZIUM_SIGNAL"]


# -- NotificationsIT ------------------------------------------------------------------------------------

@pytest.fixture
def tablea(standin):
    """NotificationsIT.before(): TABLEA (id, cola) with one row, in capture mode."""
    standin.create_table(S, "TABLEA", [("ID", "INTEGER NOT NULL"), ("COLA", "VARCHAR(30)")], key=["ID"])
    standin.execute(f"INSERT INTO \"{S}\".\"TABLEA\" VALUES (1, 'a')")
    standin.add_table(S, "TABLEA")
    standin.agent.start()
    standin.wait_captured()
    return standin


def notifications_config(db, **extra: Any) -> dict[str, Any]:
    """NotificationsIT.config(): TestHelper.defaultConfig() with snapshot.mode initial."""
    return db.properties("testdb", **{"snapshot.mode": "initial", "include.schema.changes": "false",
                                      "poll.interval.ms": 50, **extra})


def _assert_initial_snapshot_notifications(notes: list[dict[str, Any]]) -> None:
    """calculateNotificationSize() of them (2 per collection + 2), each with InitialSnapshotNotificationService's
    exact fields; ids are random UUIDs, timestamps now."""
    assert [(n["aggregate_type"], n["type"]) for n in notes] == [
        ("Initial Snapshot", "STARTED"), ("Initial Snapshot", "IN_PROGRESS"),
        ("Initial Snapshot", "TABLE_SCAN_COMPLETED"), ("Initial Snapshot", "COMPLETED")]
    assert [n["additional_data"] for n in notes] == [
        {"connector_name": "testdb"},
        {"connector_name": "testdb", "current_collection_in_progress": "DB2INST1.TABLEA",
         "data_collections": "DB2INST1.TABLEA"},
        {"connector_name": "testdb", "scanned_collection": "DB2INST1.TABLEA", "data_collections": "DB2INST1.TABLEA",
         "total_rows_scanned": "1", "status": "SUCCEEDED"},
        {"connector_name": "testdb"}]
    assert len({n["id"] for n in notes}) == 4 and all(len(n["id"]) == 36 for n in notes)
    now = time.time() * 1000
    assert all(now - 60_000 < n["timestamp"] <= now for n in notes)


def _as_dict(n: Any) -> dict[str, Any]:
    return n.as_dict()


def test_notification_correctly_sent_on_its_topic(tablea):
    """notificationCorrectlySentOnItsTopic: the sink channel's records on notification.sink.topic.name, in order
    with the snapshot's rows (the TABLE_SCAN_COMPLETED after the table's row)."""
    run = Restarts(notifications_config(tablea, **SINK))
    try:
        run.wait(lambda rs: len(_sink(rs)) >= 4, "the notifications")
        time.sleep(0.5)
    finally:
        run.stop()
    records = run.records()
    _assert_initial_snapshot_notifications(_sink(records))
    order = [(r.topic, (r.value or {}).get("type")) for r in records if r.topic in (NOTIFICATIONS,
                                                                                   "testdb.DB2INST1.TABLEA")]
    assert order == [(NOTIFICATIONS, "STARTED"), (NOTIFICATIONS, "IN_PROGRESS"), ("testdb.DB2INST1.TABLEA", None),
                     (NOTIFICATIONS, "TABLE_SCAN_COMPLETED"), (NOTIFICATIONS, "COMPLETED")]


def test_notification_not_sent_if_no_channel_is_configured(tablea):
    """notificationNotSentIfNoChannelIsConfigured: a topic but no channel: no notification record."""
    run = Restarts(notifications_config(tablea, **{"notification.sink.topic.name": NOTIFICATIONS}))
    try:
        run.wait(lambda rs: _reads(rs, "testdb.DB2INST1.TABLEA"), "the snapshot")
        time.sleep(0.5)
    finally:
        run.stop()
    assert not _sink(run.records())
    assert [n.type for n in run.notes] == ["STARTED", "IN_PROGRESS", "TABLE_SCAN_COMPLETED", "COMPLETED"]


def test_sink_channel_without_a_topic_is_an_error(tablea):
    """reportErrorWhenSinkChannelIsEnabledAndNoTopicConfigurationProvided: the connector does not start; the error
    names notification.sink.topic.name (Debezium: "The 'notification.sink.topic.name' value is invalid: Notification
    topic name must be provided when kafka notification channel is enabled")."""
    with pytest.raises(ConfigError, match="notification.sink.topic.name"):
        EngineThread(notifications_config(tablea, **{"notification.enabled.channels": "sink"}))


def test_notifications_reach_the_in_process_listeners(tablea):
    """notificationCorrectlySentOnJmx and emittingDebeziumNotificationWillGenerateAJmxNotification, through cdc's
    in-process counterpart of the JMX channel (Engine.add_notification_listener; with snapshot.delay.ms 2000 as the
    second test): the same four notifications, STARTED and COMPLETED with only connector_name."""
    run = Restarts(notifications_config(tablea, **{"snapshot.delay.ms": 2000}))
    try:
        run.wait(lambda rs: len(run.notes) >= 4, "the notifications")
        time.sleep(0.5)
    finally:
        run.stop()
    _assert_initial_snapshot_notifications([_as_dict(n) for n in run.notes])


def test_sink_notifications_keep_the_offset_after_the_snapshot(tablea):
    """sinkNotificationWillCorrectlySaveOffsetAfterSnapshot (DBZ-7858): the notification records carry no offset of
    their own, the stored offset is the completed snapshot's, and a restart streams (its snapshot SKIPPED)."""
    run = Restarts(notifications_config(tablea, **SINK))
    try:
        run.wait(lambda rs: len(_sink(rs)) >= 4, "the notifications")
        time.sleep(0.5)
        run.stop()
        _assert_initial_snapshot_notifications(_sink(run.records()))
        assert all(r.offset is None for r in run.records() if r.topic == NOTIFICATIONS)
        stored = run.offsets.get({"server": "testdb"})
        assert stored["snapshot_completed"] is True or "snapshot" not in stored
        run.start()
        tablea.execute(f"INSERT INTO \"{S}\".\"TABLEA\" VALUES (2, 'b')")
        run.wait(lambda rs: any(r.value and r.value.get("op") == "c" for r in rs), "the insert streamed")
    finally:
        run.stop()
    again = run.runs[1].snapshot()
    assert not _reads(again, "testdb.DB2INST1.TABLEA")
    assert [(n["aggregate_type"], n["type"], n["additional_data"]) for n in _sink(again)] == [
        ("Initial Snapshot", "SKIPPED", {"connector_name": "testdb"})]


def test_initial_snapshot_notifications_of_an_empty_table_and_a_failed_read(tablea):
    """Beyond NotificationsIT, the same service's other paths: every table's IN_PROGRESS first (Debezium notifies
    them as it hands the tables to its reader), an empty table's TABLE_SCAN_COMPLETED with 0 rows; a read Db2
    refuses gives TABLE_SCAN_COMPLETED SQL_EXCEPTION (scanned_collection and status only), then ABORTED, and the
    connector fails naming the table."""
    tablea.create_table(S, "TABLEB", [("ID", "INTEGER NOT NULL")], key=["ID"])
    tablea.add_table(S, "TABLEB")
    run = Restarts(notifications_config(tablea, **{"table.include.list": "DB2INST1.TABLEA,DB2INST1.TABLEB"}))
    try:
        run.wait(lambda rs: len(run.notes) >= 6, "the notifications")
    finally:
        run.stop()
    assert [(n.type, n.additional_data.get("current_collection_in_progress") or n.additional_data.get(
        "scanned_collection"), n.additional_data.get("total_rows_scanned")) for n in run.notes] == [
        ("STARTED", None, None), ("IN_PROGRESS", "DB2INST1.TABLEA", None), ("IN_PROGRESS", "DB2INST1.TABLEB", None),
        ("TABLE_SCAN_COMPLETED", "DB2INST1.TABLEA", "1"), ("TABLE_SCAN_COMPLETED", "DB2INST1.TABLEB", "0"),
        ("COMPLETED", None, None)]
    assert {n.additional_data["data_collections"] for n in run.notes if "data_collections" in n.additional_data} == {
        "DB2INST1.TABLEA,DB2INST1.TABLEB"}

    failing = EngineThread(notifications_config(tablea, **{
        "table.include.list": "DB2INST1.TABLEA,DB2INST1.TABLEB", "topic.prefix": "other",
        "snapshot.select.statement.overrides": "DB2INST1.TABLEA",
        "snapshot.select.statement.overrides.DB2INST1.TABLEA": 'SELECT * FROM "DB2INST1"."NO_SUCH_TABLE"'}))
    notes: list[Any] = []
    failing.engine.add_notification_listener(notes.append)
    error = failing.start().join(60)
    assert error is not None and "DB2INST1.TABLEA" in str(error)
    assert [(n.type, n.additional_data) for n in notes] == [
        ("STARTED", {"connector_name": "other"}),
        *[("IN_PROGRESS", {"connector_name": "other", "current_collection_in_progress": f"DB2INST1.{t}",
                           "data_collections": "DB2INST1.TABLEA,DB2INST1.TABLEB"}) for t in ("TABLEA", "TABLEB")],
        ("TABLE_SCAN_COMPLETED", {"connector_name": "other", "scanned_collection": "DB2INST1.TABLEA",
                                  "status": "SQL_EXCEPTION"}),
        ("ABORTED", {"connector_name": "other"})]
