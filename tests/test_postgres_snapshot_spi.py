"""The snapshot SPIs against a real PostgreSQL: configuration_based, a custom snapshotter, queries, locks."""

from __future__ import annotations

import pytest

from cdc_core.errors import ConfigError
from cdc_core.engine import Engine

from cdc_process import CdcProcess, server_properties, write_properties

TOPIC = "dbserver1.public.t"


def _setup(pg, db):
    pg.execute("CREATE TABLE t (id int PRIMARY KEY, deleted boolean NOT NULL DEFAULT false);"
               "INSERT INTO t SELECT g, g % 2 = 0 FROM generate_series(1, 6) g", dbname=db)


def _run_to_exit(pg, db, tmp_path, **source):
    cdc = CdcProcess(write_properties(tmp_path / "app.properties", server_properties(pg, db, tmp_path, **source)), tmp_path)
    cdc.start()
    assert cdc.wait_exit(60) == 0, cdc.log()
    return cdc


def test_custom_snapshotter_from_an_entry_point_exports_every_time(pg_server, pg_db, tmp_path):
    _setup(pg_server, pg_db)
    props = {"snapshot.mode": "custom", "snapshot.mode.custom.name": "export"}
    _run_to_exit(pg_server, pg_db, tmp_path, **props)
    cdc = _run_to_exit(pg_server, pg_db, tmp_path, **props)
    ops = [e["value"]["payload"]["op"] for e in cdc.events(TOPIC)]
    assert ops == ["r"] * 12, "the export snapshotter snapshots at every start and never streams"


def test_configuration_based_snapshot_without_streaming(pg_server, pg_db, tmp_path):
    _setup(pg_server, pg_db)
    cdc = _run_to_exit(pg_server, pg_db, tmp_path, **{
        "snapshot.mode": "configuration_based",
        "snapshot.mode.configuration.based.snapshot.data": "true",
        "snapshot.mode.configuration.based.start.stream": "false"})
    assert len(cdc.events(TOPIC)) == 6


def test_select_statement_override_filters_snapshot_rows(pg_server, pg_db, tmp_path):
    _setup(pg_server, pg_db)
    cdc = _run_to_exit(pg_server, pg_db, tmp_path, **{
        "snapshot.mode": "initial_only",
        "snapshot.select.statement.overrides": "public.t",
        "snapshot.select.statement.overrides.public.t": "SELECT * FROM public.t WHERE NOT deleted ORDER BY id DESC"})
    assert [e["key"]["payload"]["id"] for e in cdc.events(TOPIC)] == [5, 3, 1]


def test_snapshot_include_collection_list(pg_server, pg_db, tmp_path):
    _setup(pg_server, pg_db)
    pg_server.execute("CREATE TABLE u (id int PRIMARY KEY); INSERT INTO u VALUES (1)", dbname=pg_db)
    cdc = _run_to_exit(pg_server, pg_db, tmp_path, **{
        "snapshot.mode": "initial_only", "snapshot.include.collection.list": "public.u"})
    assert cdc.events(TOPIC) == [] and len(cdc.events("dbserver1.public.u")) == 1


def test_shared_lock_mode_snapshots(pg_server, pg_db, tmp_path):
    _setup(pg_server, pg_db)
    cdc = _run_to_exit(pg_server, pg_db, tmp_path, **{"snapshot.mode": "initial_only", "snapshot.locking.mode": "shared"})
    assert len(cdc.events(TOPIC)) == 6
    assert "could not lock" not in cdc.log()


def test_snapshot_lock_timeout_is_a_clear_error(pg_server, pg_db):
    # (Through the reader: a session holding ACCESS EXCLUSIVE has an xid, which also holds up slot creation.)
    from cdc_core.errors import ConnectorError
    from cdc_postgres.snapshot import SnapshotReader

    _setup(pg_server, pg_db)
    holder = pg_server.connect(pg_db)
    holder.autocommit = False
    holder.execute("LOCK TABLE t IN ACCESS EXCLUSIVE MODE")
    conn = pg_server.connect(pg_db)
    try:
        reader = SnapshotReader(conn, "p", pg_db, 0, 100, None)
        reader.begin(None)
        with pytest.raises(ConnectorError, match="snapshot.lock.timeout.ms=300"):
            reader.lock(['LOCK TABLE "public"."t" IN ACCESS SHARE MODE'], 300)
    finally:
        conn.close()
        holder.rollback()
        holder.close()


def test_unknown_custom_names_are_configuration_errors():
    base = {"connector.class": "postgres", "database.dbname": "x", "topic.prefix": "p"}
    with pytest.raises(ConfigError) as e:
        Engine({**base, "snapshot.mode": "custom", "snapshot.mode.custom.name": "nope"})
    assert "snapshot.mode.custom.name: no snapshotter called 'nope'" in e.value.problems[0]
    with pytest.raises(ConfigError) as e:
        Engine({**base, "snapshot.mode": "custom"})
    assert e.value.problems == ["snapshot.mode.custom.name: is required when snapshot.mode=custom"]
