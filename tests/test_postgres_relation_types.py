"""Streamed events use the column types of the replication stream's own Relation message, not the live catalog.

Debezium's PgOutputMessageDecoder.handleRelationMessage builds the table from the Relation
message's type OID and type modifier (with nullability, defaults and the key read from the
catalog), so an ``ALTER COLUMN ... TYPE`` takes effect exactly at the change that follows it in
the log, whether the live catalog is ahead of the stream (the connector catches up after a
restart) or not.
"""

from __future__ import annotations

import base64
import threading
import time
from decimal import Decimal
from typing import Any

from cdc_core.engine import Engine
from cdc_core.stores.memory_offsets import MemoryOffsetStore

TOPIC = "rel.public.t"
WAIT_S = 30.0


class _Run:
    """One engine in a thread, collecting records; shares ``store`` so a second run resumes."""

    def __init__(self, pg, db: str, store: MemoryOffsetStore, **extra: Any):
        config = {"connector.class": "postgres", "database.hostname": pg.host, "database.port": pg.port,
                  "database.user": pg.user, "database.dbname": db, "topic.prefix": "rel",
                  "slot.name": f"slot_{db}", "poll.interval.ms": 20, "offset.flush.interval.ms": 0, **extra}
        self.engine = Engine(config, offset_store=store)
        self.records: list = []
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.engine.run(self.records.extend)
        except BaseException as e:  # reported by wait()
            self.error = e

    def wait(self, count: int, topic: str = TOPIC) -> list:
        """The first ``count`` records of ``topic`` (waiting for them)."""
        deadline = time.monotonic() + WAIT_S
        while len([r for r in self.records if r.topic == topic]) < count:
            assert self.thread.is_alive(), f"the engine stopped: {self.error!r}"
            assert time.monotonic() < deadline, f"timed out; got {self.records}"
            time.sleep(0.02)
        return [r for r in self.records if r.topic == topic]

    def wait_slot(self, pg, db: str) -> None:
        """Wait until the connector streams: its snapshot is over and a row inserted now reaches it."""
        pg.execute("CREATE TABLE IF NOT EXISTS streaming_ping (id serial PRIMARY KEY)", dbname=db)
        deadline = time.monotonic() + WAIT_S
        while not any(r.topic.endswith(".streaming_ping") for r in self.records):
            assert self.thread.is_alive() and time.monotonic() < deadline, repr(self.error)
            pg.execute("INSERT INTO streaming_ping VALUES (DEFAULT)", dbname=db)
            time.sleep(0.1)

    def stop(self) -> None:
        self.engine.stop()
        self.thread.join(WAIT_S)
        assert self.error is None, repr(self.error)


def _decimal(value: dict[str, Any] | str, scale: int | None = None) -> Decimal:
    """A Connect Decimal (base64 at ``scale``) or VariableScaleDecimal struct as a Python Decimal."""
    if isinstance(value, dict):
        scale, value = value["scale"], value["value"]
    unscaled = int.from_bytes(base64.b64decode(value), "big", signed=True)
    return Decimal(unscaled).scaleb(-scale)


_CHANGES = """
INSERT INTO t VALUES (1, 1.25, 'ab');
ALTER TABLE t ALTER COLUMN n TYPE numeric(6,1), ALTER COLUMN s TYPE varchar(30);
INSERT INTO t VALUES (2, 12.3, 'cd');
ALTER TABLE t ALTER COLUMN n TYPE numeric, ALTER COLUMN s SET NOT NULL;
INSERT INTO t VALUES (3, 1.23456, 'ef');
"""


def _check(records: list) -> None:
    assert [r.value["after"]["id"] for r in records] == [1, 2, 3]
    fields = [{f.name: f.schema.to_json() for f in r.value_schema.field("after").schema.fields} for r in records]
    # numeric(8,2) as the log's first Relation says, although the catalog says numeric by now.
    assert fields[0]["n"]["name"] == "org.apache.kafka.connect.data.Decimal"
    assert fields[0]["n"]["parameters"] == {"scale": "2", "connect.decimal.precision": "8"}
    assert _decimal(records[0].value["after"]["n"], 2) == Decimal("1.25")
    assert fields[1]["n"]["parameters"] == {"scale": "1", "connect.decimal.precision": "6"}
    assert _decimal(records[1].value["after"]["n"], 1) == Decimal("12.3")
    assert fields[2]["n"]["name"] == "io.debezium.data.VariableScaleDecimal"
    assert _decimal(records[2].value["after"]["n"]) == Decimal("1.23456")
    # Nullability is not in the Relation: it is the catalog's when the Relation arrives (as
    # Debezium reads it then), so the third event's, at the latest, is required.
    assert fields[2]["s"]["optional"] is False


def test_type_change_while_streaming_uses_the_relation_types(pg_server, pg_db):
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY, n numeric(8,2), s varchar(10))", dbname=pg_db)
    run = _Run(pg_server, pg_db, MemoryOffsetStore())
    try:
        run.wait_slot(pg_server, pg_db)
        pg_server.execute(_CHANGES, dbname=pg_db)
        records = run.wait(3)
    finally:
        run.stop()
    _check(records)


def test_after_a_restart_the_catalog_ahead_of_the_stream_is_not_used(pg_server, pg_db):
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY, n numeric(8,2), s varchar(10));"
                      "INSERT INTO t VALUES (0, 0, 'zz')", dbname=pg_db)
    store = MemoryOffsetStore()
    first = _Run(pg_server, pg_db, store)
    try:
        first.wait(1)
    finally:
        first.stop()
    # Made while no connector runs: at the restart the catalog already has the last types.
    pg_server.execute(_CHANGES, dbname=pg_db)
    second = _Run(pg_server, pg_db, store)
    try:
        records = second.wait(3)
    finally:
        second.stop()
    _check(records)


_MORE_CHANGES = """
INSERT INTO a VALUES (1, 'x', 1, '2020-01-01 00:00:00.5+00');
ALTER TABLE a ALTER COLUMN v TYPE text, ALTER COLUMN n TYPE bigint, ALTER COLUMN t TYPE timestamptz(0),
  ADD COLUMN c color DEFAULT 'red';
INSERT INTO a VALUES (2, 'y', 2, '2020-01-01 00:00:00.5+00', 'green');
ALTER TABLE a DROP COLUMN v;
INSERT INTO a VALUES (3, 3, '2020-01-01 00:00:00+00', DEFAULT);
"""


def test_other_type_changes_follow_the_stream(pg_server, pg_db):
    """varchar -> text, int -> bigint, timestamptz(3) -> (0), an added enum column, a dropped column (checked against Debezium 3.0.7)."""
    pg_server.execute("CREATE TYPE color AS ENUM ('red', 'green');"
                      "CREATE TABLE a (id int PRIMARY KEY, v varchar(5), n int, t timestamptz(3))", dbname=pg_db)
    run = _Run(pg_server, pg_db, MemoryOffsetStore())
    try:
        run.wait_slot(pg_server, pg_db)
        pg_server.execute(_MORE_CHANGES, dbname=pg_db)
        records = run.wait(3, "rel.public.a")
    finally:
        run.stop()
    afters = [r.value["after"] for r in records]
    assert afters == [
        {"id": 1, "v": "x", "n": 1, "t": "2020-01-01T00:00:00.500Z"},
        {"id": 2, "v": "y", "n": 2, "t": "2020-01-01T00:00:01Z", "c": "green"},
        {"id": 3, "n": 3, "t": "2020-01-01T00:00:00Z", "c": "red"},
    ]
    fields = [{f.name: f.schema.to_json() for f in r.value_schema.field("after").schema.fields} for r in records]
    assert [f["n"]["type"] for f in fields] == ["int32", "int64", "int64"]
    assert fields[1]["c"]["parameters"] == {"allowed": "red,green"} and fields[1]["c"]["default"] == "red"
