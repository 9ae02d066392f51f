"""``snapshot.delay.ms`` and ``streaming.delay.ms`` on every connector, as a library user sees them.

The snapshot's first record comes only after the snapshot delay; a change made right after the snapshot
arrives only after the streaming delay. A stop during either wait returns at once: during the snapshot
delay nothing is committed (and PostgreSQL has no slot yet), during the streaming delay the finished
snapshot stays committed, so a restart streams instead of snapshotting again, without waiting (the
streaming delay follows a snapshot only).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from kit.engine import EngineThread
from mariadb_cdc import connector_config


class _Source:
    """The connector under test, its configuration and a way to change its table."""

    def __init__(self, name: str, server: Any, db: str):
        self.name, self.server, self.db = name, server, db
        if name == "postgres":
            server.execute("CREATE TABLE items (id int PRIMARY KEY)", dbname=db)
        else:
            server.execute("CREATE TABLE items (id INT PRIMARY KEY)", db)
        self.insert(1)

    def insert(self, id_: int) -> None:
        if self.name == "postgres":
            self.server.execute(f"INSERT INTO items VALUES ({id_})", dbname=self.db)
        else:
            self.server.execute(f"INSERT INTO items VALUES ({id_})", self.db)

    def config(self, **extra: Any) -> dict[str, Any]:
        if self.name == "postgres":
            return {"connector.class": "postgres", "database.hostname": self.server.host,
                    "database.port": self.server.port, "database.user": self.server.user,
                    "database.dbname": self.db, "topic.prefix": "dl", "poll.interval.ms": 20,
                    "slot.name": f"s_{self.db}", "table.include.list": "public.items", **extra}
        return connector_config(self.server, self.db, **extra)

    def slot_exists(self) -> bool:
        """PostgreSQL: whether the connector's replication slot exists (always False elsewhere)."""
        if self.name != "postgres":
            return False
        return bool(self.server.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s",
                                        params=(f"s_{self.db}",)))


@pytest.fixture(params=["postgres", "mariadb"])
def source(request) -> _Source:
    """The table ``items`` holding row 1, on each connector's throwaway server."""
    if request.param == "postgres":
        return _Source("postgres", request.getfixturevalue("pg_server"), request.getfixturevalue("pg_db"))
    return _Source("mariadb", request.getfixturevalue("mariadb_server"), request.getfixturevalue("mariadb_db"))


def _ops(records) -> list[tuple[str, int]]:
    return [(r.value["op"], r.value["after"]["id"]) for r in records
            if r.value is not None and r.value.get("op") in ("r", "c") and r.topic.endswith(".items")]


def _first_arrival(engine: EngineThread, condition, what: str, timeout: float = 30.0) -> float:
    """Wait for ``condition(ops)``; return the monotonic time it first held."""
    deadline = time.monotonic() + timeout
    while not condition(_ops(engine.snapshot())):
        assert engine.alive, f"the engine stopped before {what}: {engine.error!r}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {_ops(engine.snapshot())}"
        time.sleep(0.01)
    return time.monotonic()


def _stop_promptly(engine: EngineThread) -> float:
    began = time.monotonic()
    engine.stop()
    assert engine.error is None, repr(engine.error)
    return time.monotonic() - began


def test_first_snapshot_record_and_first_change_wait_for_their_delays(source):
    engine = EngineThread(source.config(**{"snapshot.delay.ms": 1500, "streaming.delay.ms": 1500}))
    began = time.monotonic()
    engine.start()
    try:
        time.sleep(0.8)
        assert _ops(engine.snapshot()) == []
        assert not source.slot_exists(), "PostgreSQL: the slot exists before the snapshot delay ended"
        snapshot_at = _first_arrival(engine, lambda ops: ("r", 1) in ops, "the snapshot row")
        assert snapshot_at - began >= 1.5
        source.insert(2)
        change_at = _first_arrival(engine, lambda ops: ("c", 2) in ops, "the streamed row")
        assert change_at - snapshot_at >= 1.2, "the change arrived before the streaming delay could have ended"
    finally:
        engine.stop()
    assert _ops(engine.snapshot()) == [("r", 1), ("c", 2)]


def test_stop_during_the_snapshot_delay_returns_at_once_and_commits_nothing(source):
    engine = EngineThread(source.config(**{"snapshot.delay.ms": 600000})).start()
    time.sleep(1.0)
    assert _stop_promptly(engine) < 5.0
    assert engine.snapshot() == [] or _ops(engine.snapshot()) == []
    assert engine.offsets.all() == [], engine.offsets.all()
    assert not source.slot_exists(), "PostgreSQL: a slot was created though the snapshot never started"
    again = EngineThread(source.config(), offsets=engine.offsets, history=engine.history).start()
    try:
        _first_arrival(again, lambda ops: ("r", 1) in ops, "the snapshot after the restart")
    finally:
        again.stop()


def test_stop_during_the_streaming_delay_keeps_the_finished_snapshot(source):
    delayed = {"streaming.delay.ms": 600000}
    engine = EngineThread(source.config(**delayed)).start()
    try:
        _first_arrival(engine, lambda ops: ("r", 1) in ops, "the snapshot row")
        source.insert(2)
        time.sleep(1.5)
        assert ("c", 2) not in _ops(engine.snapshot()), "streaming started before streaming.delay.ms ended"
        assert engine.offsets.all(), "the finished snapshot's offset was not committed before the streaming delay"
    finally:
        assert _stop_promptly(engine) < 5.0
    # A restart finds the snapshot done: no second snapshot, and no streaming delay (it follows snapshots only).
    again = EngineThread(source.config(**delayed), offsets=engine.offsets, history=engine.history).start()
    try:
        _first_arrival(again, lambda ops: ("c", 2) in ops, "the change made during the delay", timeout=20.0)
        assert [op for op in _ops(again.snapshot()) if op[0] == "r"] == []
    finally:
        again.stop()
