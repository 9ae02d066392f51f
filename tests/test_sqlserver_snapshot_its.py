"""Debezium 2.7.4's SQL Server snapshot ITs on the stand-in: IncrementalSnapshotIT (AbstractIncrementalSnapshotTest,
AbstractIncrementalSnapshotWithSchemaChangesSupportTest), IncrementalSnapshotWithRecompileIT, BlockingSnapshotIT
(AbstractBlockingSnapshotTest), NotificationsIT (AbstractNotificationsIT) and SignalsIT.

The cases of one shape (populate, signal, change, read the topic back) are tests/data/sqlserver_incremental_snapshot_it
.yaml; the others are functions here, each naming the Debezium test it ports. The tables are IncrementalSnapshotIT's:
``a``/``b`` (pk int primary key, aa int), ``a42`` (four key columns named by message.key.columns, no primary key),
and its signal table without a primary key.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from kit.engine import streaming_with_notifications

from cdc_core.stores.memory_history import MemorySchemaHistoryStore
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_sqlserver.standin.testing import standin  # noqa: F401  (fixture)

DATA = yaml.safe_load((Path(__file__).parent / "data" / "sqlserver_incremental_snapshot_it.yaml").read_text())
ROW_COUNT = 1000
TABLES = ["CREATE TABLE dbo.a (pk int primary key, aa int)",
          "CREATE TABLE dbo.b (pk int primary key, aa int)",
          "CREATE TABLE dbo.a42 (pk1 integer, pk2 integer, pk3 integer, pk4 integer, aa integer)",
          "CREATE TABLE dbo.debezium_signal (id varchar(64), type varchar(32), data varchar(2048))"]
NOTIFICATIONS = "io.debezium.notification"


def _fill(value: Any, db: str) -> Any:
    if isinstance(value, str):
        return value.replace("{db}", db)
    if isinstance(value, dict):
        return {_fill(k, db): _fill(v, db) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, db) for v in value]
    return value


def _populate(standin, table: str, start: int = 0, count: int = ROW_COUNT) -> None:
    """AbstractSnapshotTest.populateTable: rows pk = i + 1, aa = i, in one transaction."""
    standin.execute(f"INSERT INTO dbo.{table} SELECT g + 1, g FROM generate_series({start}, {start + count - 1}) g")


def _setup(standin, populate: list[str] = ()) -> None:
    """IncrementalSnapshotIT.before() and the case's populate steps (CDC enabled on a and b once filled)."""
    for ddl in TABLES:
        standin.create_table(ddl)
    standin.enable_db()
    standin.enable_table("dbo", "debezium_signal")
    for what in populate:
        if what in ("a", "b"):
            _populate(standin, what)
            standin.enable_table("dbo", what)
        elif what == "a42":  # populate4PkTable
            standin.execute("INSERT INTO dbo.a42 SELECT (g + 1) / 1000, ((g + 1) / 100) % 10, ((g + 1) / 10) % 10, "
                            f"(g + 1) % 10, g FROM generate_series(0, {ROW_COUNT - 1}) g")
        elif what == "a42_nulls":  # insertsWithoutPksAndNull
            standin.execute("INSERT INTO dbo.a42 SELECT NULLIF(p1, 10), NULLIF(p2, 1), 0, 0, p1 + p2 "
                            "FROM generate_series(10, 30, 10) p1, generate_series(1, 3) p2")
        elif what.startswith("specific"):  # populateTableWithSpecificValue(2000, count, 12345678)
            count = int(what.partition("_")[2] or 10)
            standin.execute(f"INSERT INTO dbo.a SELECT {count} + g, 12345678 FROM generate_series(2001, 2000 + {count}) g")
        else:
            raise AssertionError(f"unknown populate step {what}")
    standin.agent.start()


def _config(standin, **extra: Any) -> dict[str, Any]:
    """IncrementalSnapshotIT.config()."""
    return standin.properties(**{
        "snapshot.mode": "no_data", "signal.data.collection": f"{standin.dbname}.dbo.debezium_signal",
        "incremental.snapshot.chunk.size": 250, "incremental.snapshot.allow.schema.changes": True,
        "message.key.columns": "dbo.a42:pk1,pk2,pk3,pk4", "poll.interval.ms": 50, **extra})


def _signal(standin, type_: str, data: Any, signal_id: str = "ad-hoc") -> None:
    """A row of the signal table (sendAdHocSnapshotSignal and friends: every one is 'ad-hoc')."""
    text = data if isinstance(data, str) else __import__("json").dumps(data)
    standin.execute("INSERT INTO dbo.debezium_signal VALUES (%s, %s, %s)", (signal_id, type_, text))


def _updates(standin, transactions: int) -> None:
    """AbstractIncrementalSnapshotTest.updates: one transaction per range of ten keys (most update nothing)."""
    standin.execute(f"""DO $$ BEGIN FOR i IN 0..{transactions - 1} LOOP
        UPDATE dbo.a SET aa = aa + 2000 WHERE pk > i * 10 AND pk <= (i + 1) * 10; COMMIT; END LOOP; END $$""")


def _topic(records: list, db: str, table: str) -> list:
    return [r for r in records if r.topic == f"server1.{db}.dbo.{table}"]


def _key(record, kind: str) -> int:
    k = record.key
    if kind == "a42":
        return k["pk1"] * 1000 + k["pk2"] * 100 + k["pk3"] * 10 + k["pk4"]
    if kind == "a42_nulls":
        return (k["pk1"] if k["pk1"] is not None else 10) + (k["pk2"] if k["pk2"] is not None else 1)
    return k["pk"]


def _latest(records: list, kind: str) -> dict[int, int]:
    """consumeMixedWithIncrementalSnapshot's map: the last value of aa per key."""
    out: dict[int, int] = {}
    for r in records:
        if r.value is not None and r.value.get("after") is not None:
            out[_key(r, kind)] = r.value["after"]["aa"]
    return out


def _expected(rows: list[dict]) -> dict[int, int]:
    out: dict[int, int] = {}
    for seg in rows:
        for k in range(seg["from"], seg["to"] + 1):
            out[k] = seg["value"] if "value" in seg else k + seg["plus"]
    return out


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["name"] for c in DATA["cases"]])
def test_incremental_snapshot_case(standin, case):
    db = standin.dbname
    case = _fill(case, db)
    _setup(standin, case.get("populate", []))
    expect = case["expect"]
    kind = expect.get("topic", "a")
    table = "a42" if kind.startswith("a42") else kind
    wanted = _expected(expect["rows"])
    done_min = expect.get("done_min")
    store, history = MemoryOffsetStore(), MemorySchemaHistoryStore()
    config = _config(standin, **case.get("config", {}))
    runner, notes = streaming_with_notifications(config, store, history)
    seen: list = []  # the records of stopped runs (restart_after)
    try:
        # startConnector: no snapshot records (snapshot.mode=no_data).
        time.sleep(0.3)
        assert not [r for r in runner.snapshot() if r.topic.count(".") == 3], "records before the signal"
        for signal in case["signals"]:
            _signal(standin, signal["type"], signal["data"])
        for statement in case.get("then", []):
            standin.execute(statement)
        if case.get("then_updates"):
            _updates(standin, case["then_updates"])

        def done(records) -> bool:
            got = _latest(_topic(seen + records, db, table), kind)
            return len(got) >= len(wanted) and (done_min is None or all(v >= done_min for v in got.values()))

        if case.get("restart_after"):
            runner.wait(lambda rs: len(_topic(rs, db, table)) > case["restart_after"], "the first records", 90)
            runner.stop()
            seen = runner.snapshot()
            runner, notes = streaming_with_notifications(config, store, history)
        runner.wait(done, "the topic's rows", 60)
        time.sleep(0.5 if not expect.get("exactly_once") else 2.0)  # anything that should not come would show
    finally:
        runner.stop()
    records = seen + runner.records
    got = _latest(_topic(records, db, table), kind)
    assert got == wanted, sorted(set(got.items()) ^ set(wanted.items()))[:10]
    if expect.get("exactly_once"):
        assert len(_topic(records, db, table)) == len(wanted)
    if expect.get("no_reads"):
        assert _topic(records, db, expect["no_reads"]) == []
    if "close_watermarks" in expect:
        (count,), = standin.execute("SELECT count(id) FROM dbo.debezium_signal WHERE type = 'snapshot-window-close'")
        assert (count != 0) == (expect["close_watermarks"] == "nonzero"), count
