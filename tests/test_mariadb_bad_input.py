"""Bad input against a real MariaDB: each misconfiguration stops the connector with a message saying how to fix it.

Server settings are changed on the session server only for the test that needs them (and put back
afterwards); the binlog-off case needs a server started without a binlog, so it gets its own.
A purged binlog position is the AS-17 scenario (``tests/data/mariadb_scenarios/restart.yaml``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from cdc_core.errors import ConfigError, ConnectorError
from cdc_mysql.embedded import EmbeddedMariaDB
from mariadb_cdc import EngineThread, connector_config, count_ops

SECRET = "s3cr3t-Pa55word"


def _failure(config: dict, timeout: float = 30.0) -> BaseException:
    """Run the engine until it stops by itself; return its error."""
    engine = EngineThread(config).start()
    error = engine.join(timeout)
    assert error is not None, "the connector did not fail"
    return error


@pytest.fixture
def global_variable(mariadb_server) -> Iterator:
    """``set(name, value)`` changes a global server variable for one test; every change is undone afterwards."""
    saved: dict[str, str] = {}

    def set_(name: str, value: str) -> None:
        if name not in saved:
            saved[name] = mariadb_server.execute(f"SELECT @@GLOBAL.{name}")[0][0]
        mariadb_server.execute(f"SET GLOBAL {name} = '{value}'")

    yield set_
    for name, value in saved.items():
        mariadb_server.execute(f"SET GLOBAL {name} = '{value}'")


@pytest.fixture
def restricted_user(mariadb_server) -> Iterator:
    """``make(grants)`` creates user ``cdc_restricted`` (password ``SECRET``) with ``grants`` on ``*.*``."""
    def make(grants: str) -> str:
        mariadb_server.execute(["DROP USER IF EXISTS 'cdc_restricted'@'%'",
                                f"CREATE USER 'cdc_restricted'@'%' IDENTIFIED BY '{SECRET}'",
                                f"GRANT {grants} ON *.* TO 'cdc_restricted'@'%'"])
        return "cdc_restricted"

    yield make
    mariadb_server.execute("DROP USER IF EXISTS 'cdc_restricted'@'%'")


def test_binlog_disabled(mariadb_db, tmp_path):
    """A server without a binlog: the message says to enable log_bin and restart the server."""
    with EmbeddedMariaDB({"log-bin": None}) as server:
        server.create_database("db1")
        error = _failure(connector_config(server, "db1"))
    assert isinstance(error, ConnectorError)
    message = str(error)
    assert "binary logging is disabled" in message and "log_bin" in message and "restart the server" in message
    assert f"{server.host}:{server.port}" in message


@pytest.mark.parametrize(("variable", "value", "needed"), [
    ("binlog_format", "STATEMENT", "ROW"),
    ("binlog_format", "MIXED", "ROW"),
    ("binlog_row_image", "MINIMAL", "FULL"),
    ("binlog_row_image", "NOBLOB", "FULL"),
])
def test_binlog_settings(mariadb_server, mariadb_db, global_variable, variable, value, needed):
    """binlog_format other than ROW, binlog_row_image other than FULL: the message names the SET GLOBAL fix."""
    global_variable(variable, value)
    error = _failure(connector_config(mariadb_server, mariadb_db))
    assert isinstance(error, ConnectorError)
    message = str(error)
    assert f"{variable}={value}" in message and needed in message
    assert f"SET GLOBAL {variable} = '{needed}'" in message and "server configuration" in message


def test_row_image_changed_by_a_session_while_streaming(mariadb_server, mariadb_db):
    """A session writing MINIMAL row images while the connector streams: it stops, naming the table, position and fix."""
    mariadb_server.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT)", database=mariadb_db)
    mariadb_server.execute("INSERT INTO t VALUES (1, 1, 1)", database=mariadb_db)
    engine = EngineThread(connector_config(mariadb_server, mariadb_db)).start()
    engine.wait(lambda rs: count_ops(rs, "r") == 1, "the snapshot")
    mariadb_server.execute(["SET SESSION binlog_row_image = 'MINIMAL'", "UPDATE t SET a = 2 WHERE id = 1"],
                           database=mariadb_db)
    error = engine.join()
    message = str(error)
    assert f"{mariadb_db}.t" in message and "mariadb-bin." in message
    assert "binlog_row_image" in message and "FULL" in message


CLIENT = "missing: REPLICATION CLIENT (called BINLOG MONITOR since MariaDB 10.5)"


@pytest.mark.parametrize(("grants", "missing"), [
    ("SELECT, RELOAD, SHOW DATABASES", f"{CLIENT} (the server says: Access denied"),
    ("SELECT, RELOAD, SHOW DATABASES", "; REPLICATION SLAVE (to read the binlog)"),
    ("SELECT, RELOAD, SHOW DATABASES, REPLICATION CLIENT", "missing: REPLICATION SLAVE (to read the binlog))"),
    ("SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE", f"{CLIENT} (the server says: Access denied"),
])
def test_missing_replication_grants(mariadb_server, mariadb_db, restricted_user, caplog, grants, missing):
    """Without REPLICATION SLAVE or REPLICATION CLIENT: the message names the user and the GRANT to run, never the password."""
    user = restricted_user(grants)
    config = connector_config(mariadb_server, mariadb_db, **{"database.user": user, "database.password": SECRET})
    with caplog.at_level(logging.DEBUG):
        error = _failure(config)
    assert isinstance(error, ConnectorError)
    message = str(error)
    assert f"user {user!r}" in message and missing in message
    assert "GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT ON *.*" in message
    assert SECRET not in message
    assert not [r for r in caplog.records if SECRET in r.getMessage()], "the password was logged"


def test_wrong_password(mariadb_server, mariadb_db, restricted_user, caplog):
    """Wrong credentials: the message names the user and the two properties, never the password given."""
    user = restricted_user("SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT")
    wrong = "not-" + SECRET
    config = connector_config(mariadb_server, mariadb_db, **{"database.user": user, "database.password": wrong})
    with caplog.at_level(logging.DEBUG):
        error = _failure(config)
    message = str(error)
    assert f"{user!r}" in message and "database.user" in message and "database.password" in message
    assert wrong not in message and not [r for r in caplog.records if wrong in r.getMessage()]


def test_enough_grants_work(mariadb_server, mariadb_db, restricted_user):
    """The documented grants are enough: snapshot and streaming run as that user."""
    user = restricted_user("SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT")
    mariadb_server.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=mariadb_db)
    mariadb_server.execute("INSERT INTO t VALUES (1)", database=mariadb_db)
    config = connector_config(mariadb_server, mariadb_db, **{"database.user": user, "database.password": SECRET})
    engine = EngineThread(config).start()
    try:
        engine.wait(lambda rs: count_ops(rs, "r") == 1, "the snapshot")
        mariadb_server.execute("INSERT INTO t VALUES (2)", database=mariadb_db)
        engine.wait(lambda rs: count_ops(rs, "c") == 1, "the streamed insert")
    finally:
        engine.stop()


@pytest.mark.parametrize(("props", "fragment"), [
    ({"database.include.list": "a", "database.exclude.list": "b"}, "database.include.list"),
    ({"snapshot.mode": "sometimes"}, "snapshot.mode"),
    ({"snapshot.locking.mode": "maximal"}, "snapshot.locking.mode"),
    ({"bigint.unsigned.handling.mode": "huge"}, "bigint.unsigned.handling.mode"),
    ({"database.port": "x"}, "database.port"),
])
def test_invalid_properties_fail_fast(mariadb_server, mariadb_db, props, fragment):
    """Invalid or contradictory properties: ConfigError naming the property, before any connection."""
    with pytest.raises(ConfigError) as info:
        EngineThread({**connector_config(mariadb_server, mariadb_db), **props})
    assert fragment in str(info.value)
