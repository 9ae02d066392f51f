"""The ODBC connection the connector asks pyodbc for: the driver search and the connection string."""

from __future__ import annotations

import logging

import pytest

from cdc_core.config import Config
from cdc_core.errors import ConnectorError
from cdc_sqlserver import odbc
from cdc_sqlserver.standin.dbapi import parse_connection_string

BASE = {"database.hostname": "db.example", "database.port": 1433, "database.user": "cdc", "database.password": "p;w}d",
        "database.names": "testDB", "topic.prefix": "server1"}


@pytest.fixture
def drivers():
    """Pretend these ODBC drivers are installed."""
    saved = odbc.CONNECT, odbc.DRIVERS
    installed: list[str] = []
    odbc.install(saved[0], lambda: installed)
    yield installed
    odbc.install(*saved)


def test_microsoft_driver_18_is_preferred_and_named_in_the_log(drivers, caplog):
    drivers[:] = ["FreeTDS", "ODBC Driver 17 for SQL Server", "ODBC Driver 18 for SQL Server"]
    with caplog.at_level(logging.INFO, "cdc_sqlserver.odbc"):
        text = odbc.connection_string(Config(BASE), "testDB")
    parts = parse_connection_string(text)
    assert parts["driver"] == "ODBC Driver 18 for SQL Server"
    assert (parts["server"], parts["database"], parts["uid"], parts["pwd"]) == ("db.example,1433", "testDB", "cdc",
                                                                                 "p;w}d")
    assert (parts["encrypt"], parts["trustservercertificate"]) == ("yes", "no")
    assert any("ODBC driver ODBC Driver 18 for SQL Server" in r.getMessage() for r in caplog.records)
    assert not any("p;w}d" in r.getMessage() for r in caplog.records)


def test_freetds_when_no_microsoft_driver(drivers):
    drivers[:] = ["PostgreSQL Unicode", "FreeTDS"]
    parts = parse_connection_string(odbc.connection_string(Config({**BASE, "database.port": 1500}), "testDB"))
    assert (parts["driver"], parts["server"], parts["port"], parts["tds_version"]) == ("FreeTDS", "db.example", "1500",
                                                                                      "7.4")


def test_encrypt_off_trust_on_named_instance_and_driver_pass_through(drivers):
    drivers[:] = ["ODBC Driver 18 for SQL Server"]
    config = {k: v for k, v in BASE.items() if k != "database.port"}
    config.update({"database.instance": "SQLEXPRESS", "database.encrypt": "false",
                   "database.trustServerCertificate": "true", "driver.LoginTimeout": "7",
                   "database.applicationIntent": "ReadOnly"})
    parts = parse_connection_string(odbc.connection_string(Config(config), "testDB"))
    assert parts["server"] == "db.example\\SQLEXPRESS"
    assert (parts["encrypt"], parts["trustservercertificate"]) == ("no", "yes")
    assert (parts["logintimeout"], parts["applicationintent"]) == ("7", "ReadOnly")


def test_no_driver_is_one_clear_refusal(drivers):
    drivers[:] = ["PostgreSQL Unicode"]
    with pytest.raises(ConnectorError) as info:
        odbc.connection_string(Config(BASE), "testDB")
    message = str(info.value)
    assert "no ODBC driver for SQL Server is installed" in message and "msodbcsql18" in message
    assert "PostgreSQL Unicode" in message and "p;w}d" not in message
