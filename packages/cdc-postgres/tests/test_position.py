"""PostgreSQL's LogPosition: the WAL position now, and the first offset past it splits the stream exactly."""

from __future__ import annotations

import threading
import time

from cdc_core.config import Config
from cdc_core.events import Checkpoint, RawChange
from cdc_core.logs import connector_logger
from cdc_core.spi.connector import ConnectorContext
from cdc_core.spi.position import LogPosition, log_position_for
from cdc_postgres.connector import PostgresConnector
from cdc_postgres.position import PostgresLogPosition


def _config(pg, db, **extra) -> Config:
    return Config({"connector.class": "postgres", "database.hostname": pg.host, "database.port": str(pg.port),
                   "database.user": pg.user, "database.dbname": db, "topic.prefix": "pos",
                   "table.include.list": "public.t", "snapshot.mode": "no_data", "poll.interval.ms": "100",
                   "status.update.interval.ms": "200", **extra})


def test_the_capability_is_found_and_judges_offsets():
    assert log_position_for(PostgresConnector) is PostgresLogPosition
    position = PostgresLogPosition(Config({"connector.class": "postgres"}))
    assert isinstance(position, LogPosition)
    at = {"lsn": 1000}
    assert not position.reached(None, at) and not position.reached({}, at)
    assert not position.reached({"snapshot": True, "lsn": 5000, "lsn_commit": 5000}, at)
    assert not position.reached({"lsn_proc": 900, "lsn_commit": 999, "txId": 7}, at)  # committed before
    assert position.reached({"lsn_proc": 1200, "lsn_commit": 1000, "txId": 8}, at)  # committed after
    assert position.reached({"lsn_proc": None, "lsn_commit": 1000, "txId": 7}, at)  # commit ends at the position
    assert position.reached({"lsn_proc": None, "lsn_commit": 1000, "txId": None}, at)  # idle at the position
    with_end_events = PostgresLogPosition(Config({"connector.class": "postgres", "provide.transaction.metadata": "true"}))
    assert not with_end_events.reached({"lsn_proc": None, "lsn_commit": 1000, "txId": 7}, at)  # its END event is before
    assert with_end_events.reached({"lsn_proc": None, "lsn_commit": 1000, "txId": None}, at)


class _Reader:
    """The connector streaming in a thread, every item kept in order."""

    def __init__(self, config: Config):
        self.connector = PostgresConnector(config, ConnectorContext(log=connector_logger("cdc.postgres", "postgres", "pos")))
        self.items: list[RawChange | Checkpoint] = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        self.connector.start(None)
        try:
            for batch in self.connector.stream():
                with self.lock:
                    self.items.extend(batch)
        finally:
            self.connector.close()

    def wait(self, predicate, what: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                if predicate(list(self.items)):
                    return
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.05)

    def stop(self) -> None:
        self.connector.stop()
        self.thread.join(30)


def _ids(items) -> list[int]:
    return [int(i.after[0]) for i in items if isinstance(i, RawChange)]


def test_the_first_offset_past_the_position_splits_the_stream(pg_server, pg_db):
    ex = lambda q: pg_server.execute(q, dbname=pg_db)  # noqa: E731
    ex("CREATE TABLE t (id int PRIMARY KEY); CREATE TABLE u (id int PRIMARY KEY)")
    config = _config(pg_server, pg_db)
    reader = _Reader(config)
    reader.thread.start()
    try:
        reader.wait(lambda items: any(isinstance(i, Checkpoint) for i in items), "the slot")
        for i in range(1, 4):
            ex(f"INSERT INTO t VALUES ({i})")
        ex("INSERT INTO u VALUES (1)")  # WAL that is not captured
        capability = PostgresLogPosition(config)
        position = capability.current_position()
        for i in range(4, 7):
            ex(f"INSERT INTO t VALUES ({i})")
        reader.wait(lambda items: 6 in _ids(items), "the changes after the position")
    finally:
        reader.stop()
    items = reader.items
    first = next(k for k, i in enumerate(items) if capability.reached(i.offset, position))
    assert _ids(items[:first]) == [1, 2, 3]
    assert isinstance(items[first], Checkpoint) or _ids(items[first:first + 1]) == [4]


def test_a_quiet_database_reaches_the_position(pg_server, pg_db):
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname=pg_db)
    config = _config(pg_server, pg_db)
    reader = _Reader(config)
    reader.thread.start()
    try:
        reader.wait(lambda items: any(isinstance(i, Checkpoint) for i in items), "the slot")
        pg_server.execute("INSERT INTO t VALUES (1)", dbname=pg_db)
        capability = PostgresLogPosition(config)
        position = capability.current_position()
        reader.wait(lambda items: any(capability.reached(i.offset, position) for i in items), "an offset at the position")
    finally:
        reader.stop()
    first = next(k for k, i in enumerate(reader.items) if capability.reached(reader.items[k].offset, position))
    assert _ids(reader.items[:first]) == [1]
