"""A custom Snapshotter whose ``should_stream_events_starting_from_snapshot()`` is false (Debezium's SPI): a
connector resuming with a stored position and taking a snapshot first streams what happened while it was away
(deletes included), then snapshots, then streams on from where that catch-up stopped."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from cdc_core.config import Config
from cdc_core.hookspecs import hookimpl
from cdc_core.plugins import PluginRegistry

from kit.engine import EngineThread


class _AlwaysSnapshotter:
    """Snapshot at every start, then stream."""

    name: ClassVar[str] = "always-from-snapshot"

    def configure(self, config: Config) -> None:
        """Nothing to configure."""

    def should_snapshot_data(self, offset_exists: bool, snapshot_in_progress: bool) -> bool:
        return True

    def should_snapshot_schema(self, offset_exists: bool, snapshot_in_progress: bool) -> bool:
        return True

    def should_stream(self) -> bool:
        return True

    def should_snapshot_on_schema_error(self) -> bool:
        return True

    def should_snapshot_on_data_error(self) -> bool:
        return True

    def snapshot_completed(self) -> None:
        """Nothing to do."""

    def snapshot_aborted(self) -> None:
        """Nothing to do."""


class CatchUpSnapshotter(_AlwaysSnapshotter):
    """As Debezium's test CustomStartFromStreamingTestSnapshot: snapshot every time, streaming resumes where it
    left off."""

    name: ClassVar[str] = "catch-up"

    def should_stream_events_starting_from_snapshot(self) -> bool:
        return False


class _Plugins:
    @hookimpl
    def register_snapshotters(self) -> list[type]:
        return [CatchUpSnapshotter, _AlwaysSnapshotter]


@pytest.fixture
def plugins() -> PluginRegistry:
    registry = PluginRegistry()
    registry.register(_Plugins(), name="catch-up-tests")
    return registry


def _config(pg, db, **extra: Any) -> dict[str, Any]:
    return {"connector.class": "postgres", "database.hostname": pg.host, "database.port": pg.port,
            "database.user": pg.user, "database.dbname": db, "topic.prefix": "cu", "table.include.list": "public.t",
            "poll.interval.ms": 20, "offset.flush.interval.ms": 0, **extra}


def _events(records) -> list[tuple[str, int]]:
    out = []
    for r in records:
        if r.value and r.topic == "cu.public.t":
            row = r.value["after"] or r.value["before"]
            out.append((r.value["op"], row["id"]))
    return out


def _second_start(pg, db, plugins, name: str) -> list[tuple[str, int]]:
    """Snapshot and stream, stop; change rows while stopped; start with ``name``; insert one more row."""
    pg.execute("CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t VALUES (1, 'a'), (2, 'b')", dbname=db)
    first = EngineThread(_config(pg, db), plugins=plugins).start()
    first.wait(lambda rs: len(_events(rs)) == 2, "the first snapshot")
    pg.execute("INSERT INTO t VALUES (3, 'c')", dbname=db)
    first.wait(lambda rs: ("c", 3) in _events(rs), "the streamed insert")
    first.stop()
    pg.execute("INSERT INTO t VALUES (4, 'd'); UPDATE t SET v = 'A' WHERE id = 1; DELETE FROM t WHERE id = 2",
               dbname=db)
    second = EngineThread(_config(pg, db, **{"snapshot.mode": "custom", "snapshot.mode.custom.name": name}),
                          offsets=first.offsets, plugins=plugins).start()
    try:
        second.wait(lambda rs: sum(op == "r" for op, _ in _events(rs)) == 3, "the second snapshot")
        pg.execute("INSERT INTO t VALUES (5, 'e')", dbname=db)
        second.wait(lambda rs: ("c", 5) in _events(rs), "the insert after the snapshot")
    finally:
        second.stop()
    return _events(second.records)


def test_catch_up_streams_the_changes_made_while_stopped_before_the_snapshot(pg_server, pg_db, plugins):
    events = _second_start(pg_server, pg_db, plugins, "catch-up")
    assert events[:3] == [("c", 4), ("u", 1), ("d", 2)], events
    assert sorted(events[3:6]) == [("r", 1), ("r", 3), ("r", 4)], events
    assert events[6:] == [("c", 5)], events


def test_streaming_from_the_snapshot_skips_them(pg_server, pg_db, plugins):
    """Debezium's default (true): the snapshot shows the rows as they are; the delete is never seen."""
    events = _second_start(pg_server, pg_db, plugins, "always-from-snapshot")
    assert sorted(events[:3]) == [("r", 1), ("r", 3), ("r", 4)], events
    assert events[3:] == [("c", 5)], events
