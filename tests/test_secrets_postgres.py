"""Scenario 10 on PostgreSQL: a real user with a distinctive password; the password appears nowhere."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from psycopg import sql

from cdc_process import CdcProcess, run_cli, server_properties, write_java_properties, write_properties
from secrets_check import SECRET, assert_no_secret, check_files_and_commands, check_running_process, free_port

USER = "cdc_secret_user"


@pytest.fixture
def password_user(pg_server, pg_db) -> Iterator[str]:
    """``USER`` with password ``SECRET``, which the server checks (scram) for TCP connections of that user only."""
    hba = pg_server.data_dir / "pg_hba.conf"
    saved = hba.read_text()
    pg_server.execute(f"DROP ROLE IF EXISTS {USER}")
    pg_server.execute(f"CREATE ROLE {USER} SUPERUSER LOGIN PASSWORD '{SECRET}'")
    hba.write_text(f"host all {USER} 127.0.0.1/32 scram-sha-256\nhost replication {USER} 127.0.0.1/32 scram-sha-256\n"
                   + saved)
    pg_server.execute("SELECT pg_reload_conf()")
    time.sleep(0.5)
    try:
        yield USER
    finally:
        hba.write_text(saved)
        pg_server.execute("SELECT pg_reload_conf()")
        for _ in range(50):
            if not pg_server.execute(f"SELECT 1 FROM pg_stat_activity WHERE usename = '{USER}'"):
                break
            time.sleep(0.1)
        pg_server.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                          "WHERE slot_name = 'secret_slot' AND NOT active")
        pg_server.execute(f"DROP OWNED BY {USER}", dbname=pg_db)  # its publication
        pg_server.execute(f"DROP ROLE IF EXISTS {USER}")


def test_password_appears_nowhere(pg_server, pg_db, password_user, tmp_path):
    pg_server.execute("CREATE TABLE sec (id int PRIMARY KEY, note text)", dbname=pg_db)
    pg_server.execute("INSERT INTO sec VALUES (1, 'snapshot')", dbname=pg_db)
    metrics_port = free_port()
    props = server_properties(pg_server, pg_db, tmp_path, **{
        "database.user": password_user, "database.password": SECRET, "slot.name": "secret_slot",
        "table.include.list": "public.sec", "metrics.port": metrics_port, "heartbeat.interval.ms": 200,
    })
    config = write_properties(tmp_path / "app.properties", props)

    wrong = write_properties(tmp_path / "wrong.properties", {**props, "debezium.source.database.password": SECRET[::-1]})
    assert run_cli("run", str(wrong)).returncode == 1  # the server refuses the login (a permanent error)

    cdc = CdcProcess(config, tmp_path, "--log-level", "DEBUG").start()
    cdc.wait_events("dbserver1.public.sec", 1)
    pg_server.execute("INSERT INTO sec VALUES (2, 'stream')", dbname=pg_db)
    cdc.wait_events("dbserver1.public.sec", 2)
    check_running_process(cdc, metrics_port)
    assert cdc.terminate() == 0, cdc.log()
    check_files_and_commands(tmp_path, config)

    # Errors with the password configured: a bad property, a missing database, a wrong password.
    for name, overrides in [("bad", {"debezium.source.snapshot.mode": "sometimes"}),
                            ("missing", {"debezium.source.database.dbname": "no_such_db"}),
                            ("refused", {"debezium.source.database.password": SECRET + "x"})]:
        bad = write_properties(tmp_path / f"{name}.properties", {**props, **overrides})
        for command in (["validate"], ["--log-level", "DEBUG", "run"]):
            done = run_cli(*command, str(bad))
            assert done.returncode != 0 or command == ["validate"], done.stderr
            assert_no_secret(f"`cdc {' '.join(command)}` of {name}.properties", done.stdout + done.stderr)


@pytest.mark.parametrize("password", ["S3cr3t-Zébra-42", "S3cr3t-Zebra-42€", "S3cr3t-😀-42", "it's;a \"pass\"\nword\\ ='x"],
                         ids=["latin1", "euro", "emoji", "quotes-newline"])
def test_password_with_quotes_and_unicode_logs_in(pg_server, pg_db, password_user, tmp_path, password):
    pg_server.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(password_user), sql.Literal(password)))
    pg_server.execute("CREATE TABLE pw (id int PRIMARY KEY)", dbname=pg_db)
    pg_server.execute("INSERT INTO pw VALUES (1)", dbname=pg_db)
    props = server_properties(pg_server, pg_db, tmp_path, **{
        "database.user": password_user, "database.password": password, "slot.name": "secret_slot",
        "table.include.list": "public.pw"})
    cdc = CdcProcess(write_java_properties(tmp_path / "app.properties", props), tmp_path).start()
    cdc.wait_events("dbserver1.public.pw", 1)  # the snapshot's connection
    pg_server.execute("INSERT INTO pw VALUES (2)", dbname=pg_db)
    cdc.wait_events("dbserver1.public.pw", 2)  # the replication connection
    assert cdc.terminate() == 0, cdc.log()
