"""Scenario 10 on MariaDB: a real user with a distinctive password; the password appears nowhere."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cdc_process import CdcProcess, run_cli, write_properties
from mariadb_cdc import mariadb_properties
from secrets_check import SECRET, assert_no_secret, check_files_and_commands, check_running_process, free_port

USER = "cdc_secret_user"


@pytest.fixture
def password_user(mariadb_server) -> Iterator[str]:
    """``USER`` identified by ``SECRET``, with every privilege."""
    mariadb_server.execute([f"DROP USER IF EXISTS '{USER}'@'%'", f"CREATE USER '{USER}'@'%' IDENTIFIED BY '{SECRET}'",
                            f"GRANT ALL ON *.* TO '{USER}'@'%'"])
    yield USER
    mariadb_server.execute(f"DROP USER IF EXISTS '{USER}'@'%'")


def test_password_appears_nowhere(mariadb_server, mariadb_db, password_user, tmp_path):
    mariadb_server.execute("CREATE TABLE sec (id int PRIMARY KEY, note text)", database=mariadb_db)
    mariadb_server.execute("INSERT INTO sec VALUES (1, 'snapshot')", database=mariadb_db)
    metrics_port = free_port()
    props = mariadb_properties(mariadb_server, mariadb_db, tmp_path, **{
        "database.user": password_user, "database.password": SECRET, "metrics.port": metrics_port,
        "heartbeat.interval.ms": 200, "include.query": "true",
    })
    config = write_properties(tmp_path / "app.properties", props)
    topic = f"dbserver1.{mariadb_db}.sec"

    cdc = CdcProcess(config, tmp_path, "--log-level", "DEBUG").start()
    cdc.wait_events(topic, 1)
    mariadb_server.execute("INSERT INTO sec VALUES (2, 'stream')", database=mariadb_db)
    mariadb_server.execute("ALTER TABLE sec ADD COLUMN extra int", database=mariadb_db)  # into the schema history
    mariadb_server.execute("INSERT INTO sec VALUES (3, 'after ddl', 3)", database=mariadb_db)
    cdc.wait_events(topic, 3)
    check_running_process(cdc, metrics_port)
    assert cdc.terminate() == 0, cdc.log()
    check_files_and_commands(tmp_path, config)

    # Errors with the password configured: a bad property, a wrong password, a rejected initial statement.
    for name, overrides in [("bad", {"debezium.source.snapshot.mode": "sometimes"}),
                            ("refused", {"debezium.source.database.password": SECRET + "x"}),
                            ("statement", {"debezium.source.database.initial.statements": "SELEC 1"})]:
        bad = write_properties(tmp_path / f"{name}.properties", {**props, **overrides})
        for command in (["validate"], ["--log-level", "DEBUG", "run"]):
            done = run_cli(*command, str(bad))
            assert done.returncode != 0 or command == ["validate"], done.stderr
            assert_no_secret(f"`cdc {' '.join(command)}` of {name}.properties", done.stdout + done.stderr)
