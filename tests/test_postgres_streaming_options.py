"""PostgreSQL streaming options: ``xmin.fetch.interval.ms`` (``source.xmin``), ``schema.refresh.mode``,
``slot.stream.params``, as a user of the events and offsets sees them."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from cdc_core.engine import Engine
from cdc_core.errors import ConfigError
from cdc_core.stores.memory_offsets import MemoryOffsetStore


def _config(pg, db, **extra) -> dict:
    return {"connector.class": "postgres", "database.hostname": pg.host, "database.port": pg.port,
            "database.user": pg.user, "database.dbname": db, "topic.prefix": "so", "poll.interval.ms": 50,
            "table.include.list": "public.t", **extra}


def _run(pg, db, config: dict, actions: list[tuple[str, Callable[[list], bool]]], store=None):
    """Run the engine; after streaming starts run each statement and wait for its condition on the records."""
    store = store if store is not None else MemoryOffsetStore()
    engine = Engine(config, offset_store=store)
    records: list = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            engine.run(records.extend)
        except BaseException as e:  # noqa: BLE001 - handed to the test
            errors.append(e)

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    try:
        deadline = time.monotonic() + 30
        while not engine.metrics.streaming.connected and time.monotonic() < deadline and runner.is_alive():
            time.sleep(0.05)
        for statement, done in actions:
            pg.execute(statement, dbname=db)
            while not done(records) and time.monotonic() < deadline and runner.is_alive():
                time.sleep(0.05)
    finally:
        engine.stop()
        runner.join(30)
    return (errors[0] if errors else None), records, store


def _changes(records: list, op: str) -> list[dict]:
    return [r.value for r in records if r.value and r.value.get("op") == op]


def test_xmin_fetch_interval_puts_the_slots_xmin_in_source_and_offsets(pg_server, pg_db):
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t VALUES (1, 'a')", dbname=pg_db)
    error, records, store = _run(pg_server, pg_db, _config(pg_server, pg_db, **{"xmin.fetch.interval.ms": 100}),
                                  [("INSERT INTO t VALUES (2, 'b')", lambda rs: bool(_changes(rs, "c")))])
    assert error is None
    slot_xmin = pg_server.execute("SELECT catalog_xmin::text::bigint FROM pg_replication_slots "
                                  "WHERE slot_name = 'debezium' AND database = %s", dbname=pg_db, params=(pg_db,))
    read, created = _changes(records, "r")[0], _changes(records, "c")[0]
    assert read["source"]["xmin"] is None, "snapshot records carry no xmin, as in Debezium"
    assert isinstance(created["source"]["xmin"], int) and created["source"]["xmin"] > 0
    assert created["source"]["xmin"] <= slot_xmin[0][0]
    offset = store.get({"server": "so"})
    assert offset["xmin"] >= created["source"]["xmin"], "the committed offset carries the slot's xmin"


def test_without_xmin_fetch_interval_source_xmin_is_null(pg_server, pg_db):
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname=pg_db)
    error, records, store = _run(pg_server, pg_db, _config(pg_server, pg_db),
                                  [("INSERT INTO t VALUES (2)", lambda rs: bool(_changes(rs, "c")))])
    assert _changes(records, "c")[0]["source"]["xmin"] is None
    assert "xmin" not in store.get({"server": "so"})


def _toast_run(pg, db, mode: str) -> list:
    pg.execute("CREATE TABLE t (id int PRIMARY KEY, big text, v int);"
               "ALTER TABLE t ALTER COLUMN big SET STORAGE EXTERNAL", dbname=db)
    big = "x" * 20000  # stored out of line: an update that leaves it alone sends it as unchanged TOAST
    pg.execute("INSERT INTO t VALUES (1, %s, 0)", dbname=db, params=(big,))
    error, records, _ = _run(pg, db, _config(pg, db, **{"schema.refresh.mode": mode}), [
        ("UPDATE t SET v = 1 WHERE id = 1", lambda rs: len(_changes(rs, "u")) >= 1),
        ("ALTER TABLE t DROP COLUMN big", lambda rs: True),
        ("UPDATE t SET v = 2 WHERE id = 1", lambda rs: len(_changes(rs, "u")) >= 2),
    ])
    assert error is None
    return [r for r in records if r.value and r.value.get("op") == "u"]


@pytest.mark.parametrize("mode", ["columns_diff", "columns_diff_exclude_unchanged_toast"])
def test_schema_refresh_mode_starts_and_changes_nothing_with_pgoutput(pg_server, pg_db, mode):
    """Debezium compares a message's columns with its schema only for decoders that send no Relation messages
    (PgOutputReplicationMessage.shouldSchemaBeSynchronized is false): with pgoutput both modes give the events
    below, unchanged TOAST as the placeholder, and a dropped TOASTed column gone from the next event's schema."""
    updates = _toast_run(pg_server, pg_db, mode)
    assert [u.value["after"] for u in updates] == [
        {"id": 1, "big": "__debezium_unavailable_value", "v": 1}, {"id": 1, "v": 2}]
    assert [f.name for f in updates[1].value_schema.field("after").schema.fields] == ["id", "v"]



def test_slot_stream_params_reach_pgoutput_and_a_refusal_names_the_property(pg_server, pg_db):
    """The pairs go to START_REPLICATION: pgoutput refuses a decoder's option it does not know (wal2json's
    ``add-tables``), and the connector stops naming slot.stream.params instead of retrying."""
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname=pg_db)
    error, _, _ = _run(pg_server, pg_db, _config(pg_server, pg_db, **{
        "slot.stream.params": "add-tables=public.t;include-lsn=true", "snapshot.mode": "no_data"}), [])
    assert error is not None
    assert "slot.stream.params" in str(error) and "add-tables" in str(error)


@pytest.mark.parametrize(("value", "reason"), [
    ("proto_version=1", "cdc chooses the protocol version"),
    ("messages=false", "message.prefix.exclude.list"),
    ("binary=true", "text format"),
    ("origin=none;publication_names=other", "publication.name"),
    ("origin", "is not key=value"),
])
def test_slot_stream_params_that_conflict_with_cdcs_own_are_refused(pg_server, pg_db, value, reason):
    with pytest.raises(ConfigError) as e:
        Engine(_config(pg_server, pg_db, **{"slot.stream.params": value}), offset_store=MemoryOffsetStore())
    assert "slot.stream.params" in str(e.value) and reason in str(e.value)


def test_slot_stream_param_origin_none_leaves_out_replicated_changes(pg_server, pg_db):
    """PostgreSQL 16's pgoutput ``origin=none``: changes a session made under a replication origin (as a
    subscriber applying another server's changes does) are not sent; local ones are."""
    if int(pg_server.execute("SHOW server_version_num")[0][0]) < 160000:
        pytest.skip("pgoutput's origin option needs PostgreSQL 16; this server is older")
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY); SELECT pg_replication_origin_create('elsewhere')",
                      dbname=pg_db)
    replicated = ("SELECT pg_replication_origin_session_setup('elsewhere'); INSERT INTO t VALUES (1);"
                  "SELECT pg_replication_origin_session_reset(); INSERT INTO t VALUES (2)")
    error, records, _ = _run(pg_server, pg_db, _config(pg_server, pg_db, **{"slot.stream.params": "origin=none"}),
                             [(replicated, lambda rs: bool(_changes(rs, "c")))])
    assert error is None
    assert [c["after"]["id"] for c in _changes(records, "c")] == [2]


def test_initial_statements_split_at_semicolons_with_doubled_ones_escaped(pg_server, pg_db):
    """As Debezium's parseSqlStatementString: ``;`` separates, ``;;`` is a semicolon inside a statement."""
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname=pg_db)
    seen: list = []

    def sessions(records) -> bool:
        seen[:] = pg_server.execute("SELECT application_name FROM pg_stat_activity WHERE datname = %s "
                                    "AND application_name LIKE 'cdc %%'", params=(pg_db,))
        return bool(seen)

    error, _, _ = _run(pg_server, pg_db, _config(pg_server, pg_db, **{
        "database.initial.statements": "SET application_name = 'cdc a;;b';  ;SET lock_timeout = '7s';"}),
        [("SELECT 1", sessions)])
    assert error is None
    assert ("cdc a;b",) in seen


def test_initial_statements_parse_as_debezium():
    from cdc_core.config import Config
    from cdc_postgres.config import initial_statements

    def split(text: str) -> list[str]:
        return initial_statements(Config({"database.initial.statements": text}))

    assert split("SET a = 1; SET b = 2;") == ["SET a = 1", "SET b = 2"]
    assert split("SELECT ';;' ;; x;;") == ["SELECT ';' ; x;"]
    assert split(" ; ;") == [] and split("") == []
