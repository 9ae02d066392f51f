"""``replica.identity.autoset.values``: captured tables get the replica identity the rules name, so updates carry
the full ``before`` image a user asked for; bad rules are refused at start."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from cdc_core.engine import Engine
from cdc_core.errors import ConfigError
from cdc_core.stores.memory_offsets import MemoryOffsetStore


def _config(pg, db, autoset: str) -> dict:
    return {"connector.class": "postgres", "database.hostname": pg.host, "database.port": pg.port,
            "database.user": pg.user, "database.dbname": db, "topic.prefix": "ri", "poll.interval.ms": 50,
            "table.include.list": "public.full_t,public.idx_t,public.kept_t,other.both_t",
            "replica.identity.autoset.values": autoset}


def _identity(pg, db, table: str) -> str:
    return pg.execute(f"SELECT relreplident FROM pg_class WHERE oid = '{table}'::regclass", dbname=db)[0][0]


def test_rules_set_the_identity_and_updates_carry_the_full_before_image(pg_server, pg_db, caplog):
    pg = pg_server
    for stmt in ("CREATE TABLE full_t (id int PRIMARY KEY, a text, b text)",
                 "CREATE TABLE idx_t (id int PRIMARY KEY, code text NOT NULL)",
                 "CREATE UNIQUE INDEX idx_t_code ON idx_t (code)",
                 "CREATE TABLE kept_t (id int PRIMARY KEY, a text)",
                 "CREATE SCHEMA other", "CREATE TABLE other.both_t (id int PRIMARY KEY)",
                 "INSERT INTO full_t VALUES (1, 'x', 'y')"):
        pg.execute(stmt, dbname=pg_db)
    # Two rules match other.both_t: Debezium logs an error and leaves that table alone.
    engine = Engine(_config(pg, pg_db, "public.full.*:FULL, public.idx_t:INDEX idx_t_code,other.*:NOTHING,"
                                       "OTHER.BOTH_T:DEFAULT"),
                    offset_store=MemoryOffsetStore())
    records: list = []
    runner = threading.Thread(target=engine.run, args=(records.extend,))
    with caplog.at_level(logging.INFO):
        runner.start()
        try:
            deadline = time.monotonic() + 30
            while not any(r.topic == "ri.public.full_t" for r in records) and time.monotonic() < deadline:
                time.sleep(0.05)
            pg.execute("UPDATE full_t SET b = 'z' WHERE id = 1", dbname=pg_db)
            while not any(r.value and r.value.get("op") == "u" for r in records) and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            engine.stop()
            runner.join(30)
    assert _identity(pg, pg_db, "full_t") == "f"
    assert _identity(pg, pg_db, "idx_t") == "i"
    assert pg.execute("SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                      "WHERE i.indrelid = 'idx_t'::regclass AND i.indisreplident", dbname=pg_db) == [("idx_t_code",)]
    assert _identity(pg, pg_db, "kept_t") == "d", "a table no rule names keeps its identity"
    assert _identity(pg, pg_db, "other.both_t") == "d", "a table two rules match keeps its identity"
    assert "more than one regular expression matches table other.both_t" in caplog.text
    update = next(r.value for r in records if r.value and r.value.get("op") == "u")
    assert update["before"] == {"id": 1, "a": "x", "b": "y"}, "REPLICA IDENTITY FULL gives the whole old row"


@pytest.mark.parametrize("value", ["public.t:EVERYTHING", "public.t FULL", "public.t:INDEX"])
def test_malformed_rules_are_refused_naming_the_property(pg_server, pg_db, value):
    with pytest.raises(ConfigError) as e:
        Engine(_config(pg_server, pg_db, value), offset_store=MemoryOffsetStore())
    assert "replica.identity.autoset.values" in str(e.value)
