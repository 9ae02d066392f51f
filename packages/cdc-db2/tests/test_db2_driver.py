"""The real driver: ibm-db is installed with its bundled CLI driver, loads, and a refused connection is one clear error.

No Db2 runs here, so the driver is checked up to the network: a connection to a port nothing
listens on must reach the CLI driver (SQL30081N) and come back as the connector's error.
"""

from __future__ import annotations

import socket
from importlib.metadata import version

import pytest

from cdc_core.config import Config
from cdc_core.engine import Engine
from cdc_core.errors import ConnectorError, RetriableError
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_db2 import driver
from cdc_db2.standin.dbapi import parse_connection_string

SECRET = "pw;with}odd{chars"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ibm_db_with_its_cli_driver_is_installed_and_loads():
    import ibm_db
    import ibm_db_dbi

    assert version("ibm-db") >= "3.3.0"
    assert callable(ibm_db.connect) and callable(ibm_db_dbi.connect)
    assert driver.CONNECT.__name__ == "_ibm_db_connect"  # production goes through ibm_db_dbi


def test_connection_string_from_debeziums_properties():
    config = Config({"database.hostname": "db.example", "database.port": 50001, "database.user": "db2inst1",
                     "database.password": SECRET, "database.dbname": "TESTDB", "topic.prefix": "p",
                     "driver.Security": "SSL", "driver.SSLServerCertificate": "/certs/db2.arm"})
    text = driver.connection_string(config)
    assert {k: v for k, v in parse_connection_string(text).items() if k != "CONNECTTIMEOUT"} == {
        "DATABASE": "TESTDB", "HOSTNAME": "db.example", "PORT": "50001", "PROTOCOL": "TCPIP", "SECURITY": "SSL",
        "SSLSERVERCERTIFICATE": "/certs/db2.arm"}
    assert SECRET not in text  # user and password go to ibm_db_dbi.connect as arguments of their own


def test_a_refused_connection_through_the_real_driver_is_the_connectors_clear_error():
    port = _free_port()
    config = {"connector.class": "io.debezium.connector.db2.Db2Connector", "database.hostname": "127.0.0.1",
              "database.port": port, "database.user": "db2inst1", "database.password": SECRET,
              "database.dbname": "TESTDB", "topic.prefix": "p", "errors.max.retries": 0}
    with pytest.raises(ConnectorError) as info:
        Engine(config, offset_store=MemoryOffsetStore()).run(lambda records: None)
    message = str(info.value)
    assert isinstance(info.value, RetriableError)
    assert message.startswith(f"cannot connect to Db2 at 127.0.0.1:{port}/TESTDB: [IBM][CLI Driver] SQL30081N")
    assert SECRET not in message and "\n" not in message


def test_the_cli_query_timeout_attribute_is_the_clis():
    import ibm_db

    assert driver.SQL_ATTR_QUERY_TIMEOUT == ibm_db.SQL_ATTR_QUERY_TIMEOUT
