"""Bad input: each mistake gets a clear error that names what is wrong and how to fix it."""

from __future__ import annotations

import socket

import pytest

from cdc_postgres.embedded import EmbeddedPostgres

from cdc_process import CdcProcess, run_cli, server_properties, write_properties


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("command", ["validate", "run"])
def test_unknown_and_invalid_properties_exit_2_one_line_each(pg_server, pg_db, tmp_path, command):
    props = server_properties(pg_server, pg_db, tmp_path, **{
        "snapshot.mode": "sometimes", "max.batch.size": "lots", "database.pasword": "x",
        "database.password": "TopSecret-123", "table.include.list": "public.a", "table.exclude.list": "public.b",
    })
    props["debezium.sink.file.colour"] = "blue"
    config = write_properties(tmp_path / "bad.properties", props)
    result = run_cli(command, str(config))
    assert result.returncode == 2, result.stderr
    lines = [line.strip() for line in result.stderr.splitlines() if line.startswith("  ")]
    assert any(l.startswith("debezium.source.snapshot.mode: 'sometimes' is not one of") for l in lines), lines
    assert any(l.startswith("debezium.source.max.batch.size: 'lots' is not an integer") for l in lines), lines
    assert "debezium.source.database.pasword: unknown property; did you mean debezium.source.database.password?" in lines
    assert "debezium.source.table.exclude.list: cannot be used together with table.include.list; set only one of them" in lines
    assert any("debezium.sink.file.colour" in l for l in lines), lines
    assert "TopSecret-123" not in result.stderr + result.stdout
    assert not (tmp_path / "offsets.json").exists() and not (tmp_path / "events").exists(), "something was started"


def test_exclusive_lists_are_rejected(pg_server, pg_db, tmp_path):
    props = server_properties(pg_server, pg_db, tmp_path, **{"table.include.list": "public.a", "table.exclude.list": "public.b"})
    result = run_cli("validate", str(write_properties(tmp_path / "x.properties", props)))
    assert result.returncode == 2
    assert "debezium.source.table.exclude.list: cannot be used together with table.include.list" in result.stderr


def test_valid_configuration_validates(pg_server, pg_db, tmp_path):
    result = run_cli("validate", str(write_properties(tmp_path / "ok.properties", server_properties(pg_server, pg_db, tmp_path))))
    assert result.returncode == 0, result.stderr
    assert "configuration is valid" in result.stdout


def test_unreachable_database_names_host_and_port_and_is_retried(tmp_path):
    port = _free_port()

    class Closed:
        host, user = "127.0.0.1", "postgres"

    Closed.port = port
    props = server_properties(Closed, "nowhere", tmp_path, **{
        "errors.max.retries": 2, "errors.retry.delay.initial.ms": 50, "database.password": "TopSecret-123",
    })
    cdc = CdcProcess(write_properties(tmp_path / "app.properties", props), tmp_path).start()
    code = cdc.wait_exit(60)
    log = cdc.log()
    assert code == 1, log
    assert f"cannot connect to PostgreSQL at 127.0.0.1:{port}" in log
    assert log.count("retrying in") == 2, log
    assert "TopSecret-123" not in log


def test_wal_level_not_logical_says_how_to_fix(tmp_path):
    with EmbeddedPostgres(settings={"wal_level": "replica"}) as pg:
        pg.create_database("app")
        props = server_properties(pg, "app", tmp_path)
        cdc = CdcProcess(write_properties(tmp_path / "app.properties", props), tmp_path).start()
        assert cdc.wait_exit(60) == 1
    log = cdc.log()
    assert "wal_level=replica" in log and "ALTER SYSTEM SET wal_level = logical" in log, log


def test_missing_replication_privilege_says_how_to_fix(pg_server, pg_db, tmp_path):
    pg_server.execute("DO $$BEGIN CREATE ROLE plain_user LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END$$")
    props = server_properties(pg_server, pg_db, tmp_path, **{"database.user": "plain_user"})
    cdc = CdcProcess(write_properties(tmp_path / "app.properties", props), tmp_path).start()
    assert cdc.wait_exit(60) == 1
    assert "lacks the REPLICATION privilege" in cdc.log() and 'ALTER ROLE "plain_user" WITH REPLICATION' in cdc.log()


def test_missing_table_says_how_to_fix(pg_server, pg_db, tmp_path):
    props = server_properties(pg_server, pg_db, tmp_path, **{"table.include.list": "public.nope"})
    cdc = CdcProcess(write_properties(tmp_path / "app.properties", props), tmp_path).start()
    assert cdc.wait_exit(60) == 1
    log = cdc.log()
    assert "table.include.list names 'public.nope'" in log and "has no such table" in log, log


def test_corrupt_offsets_file_refuses_to_start_and_is_kept(pg_server, pg_db, tmp_path):
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname=pg_db)
    offsets = tmp_path / "offsets.json"
    offsets.write_text('{"version": 1, "offsets": [{"partition": {"server": "dbserver1"}, "off')
    props = server_properties(pg_server, pg_db, tmp_path)
    cdc = CdcProcess(write_properties(tmp_path / "app.properties", props), tmp_path).start()
    assert cdc.wait_exit(60) == 1
    assert f"offsets file {offsets} is corrupt" in cdc.log()
    assert offsets.read_text().endswith('"off'), "the corrupt file was overwritten"
    assert not (tmp_path / "events").exists() or not any((tmp_path / "events").iterdir())
    shown = run_cli("offsets", "show", str(tmp_path / "app.properties"))
    assert shown.returncode == 1 and str(offsets) in shown.stderr
