"""The connection layer: the CLI connection string and the one ``connect`` seam.

Production connects through ``ibm_db_dbi.connect`` (the ibm-db wheel bundles IBM's CLI driver).
Tests replace ``CONNECT`` (``install``) with a DB-API connection over the stand-in
(``cdc_db2.standin.dbapi``); nothing else in the connector knows which one it talks to. The
connector uses the DB-API interface only: ``cursor()``, ``execute(sql, params)`` with ``?``
markers, ``fetchone/fetchmany/fetchall``, ``commit``, ``rollback``, ``set_autocommit``, ``close``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cdc_core.config import Config
from cdc_db2 import config as dbc


def _ibm_db_connect(connection_string: str, user: str, password: str) -> Any:
    """ibm_db_dbi.connect, imported only when a connection is made (cdc-core runs without it)."""
    import ibm_db_dbi

    return ibm_db_dbi.connect(connection_string, user, password)


#: ``(connection_string, user, password) -> DB-API connection``; replaced by the tests' stand-in only.
CONNECT: Callable[[str, str, str], Any] = _ibm_db_connect


#: ``driver.Driver`` value that routes connections to the test stand-in (``cdc_db2.standin``) in processes a test
#: cannot set the seam in (Spark's Python workers, cdc-spark's snapshot holder). Never used in production.
STANDIN_DRIVER = "cdc stand-in"


def install(connect: Callable[[str, str, str], Any]) -> None:
    """Route every connection through ``connect`` (the tests' stand-in); production never calls this."""
    global CONNECT
    CONNECT = connect


def _value(text: str) -> str:
    """A CLI connection-string value, braced where it holds ``;`` or surrounding blanks."""
    if ";" in text or text != text.strip() or text.startswith("{"):
        return "{" + text + "}"
    return text


def connection_string(config: Config) -> str:
    """``DATABASE=...;HOSTNAME=...;PORT=...;PROTOCOL=TCPIP`` plus ``driver.*`` keywords.

    The user and password are not part of it: they go to ``ibm_db_dbi.connect`` as its own
    arguments, so no password needs quoting and none is in the string.

    TLS is the CLI driver's own keywords, passed through: ``driver.SECURITY=SSL`` and
    ``driver.SSLServerCertificate=<path>`` (or ``driver.SSLClientKeystoredb``...).
    """
    parts = {"DATABASE": config.get(dbc.DBNAME), "HOSTNAME": config.get(dbc.HOSTNAME),
             "PORT": str(config.get(dbc.PORT)), "PROTOCOL": "TCPIP"}
    parts["CONNECTTIMEOUT"] = "30"
    for key, value in dbc.driver_properties(config).items():
        parts[key.upper()] = value
    return "".join(f"{k}={_value(v)};" for k, v in parts.items())


#: The CLI's ``SQL_ATTR_QUERY_TIMEOUT`` (``ibm_db.SQL_ATTR_QUERY_TIMEOUT``): set on the connection, the
#: default of every statement it prepares.
SQL_ATTR_QUERY_TIMEOUT = 0


def connect(config: Config) -> Any:
    """A DB-API connection to the configured database, autocommit on, ``database.query.timeout.ms`` set."""
    named = {k.lower(): v for k, v in dbc.driver_properties(config).items()}.get("driver")
    if CONNECT is _ibm_db_connect and named == STANDIN_DRIVER:
        from cdc_db2.standin import dbapi

        dbapi.install()
    conn = CONNECT(connection_string(config), config.get(dbc.USER) or "", config.get(dbc.PASSWORD) or "")
    conn.set_autocommit(True)
    timeout_ms = config.get(dbc.QUERY_TIMEOUT_MS)
    if timeout_ms:
        # Whole seconds, as the CLI counts them (at least 1: 0 would mean no timeout).
        conn.set_option({SQL_ATTR_QUERY_TIMEOUT: max(1, (timeout_ms + 999) // 1000)})
    return conn
