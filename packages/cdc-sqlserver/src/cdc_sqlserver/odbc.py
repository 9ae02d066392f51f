"""The connection layer: the ODBC driver search, the connection string, and the one ``connect`` seam.

Production connects through ``pyodbc.connect``. Tests replace ``CONNECTOR`` (``install``) with a
DB-API adapter of pyodbc's interface (``cdc_sqlserver.standin.dbapi``); nothing else in the
connector knows which one it talks to.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from cdc_core.config import Config
from cdc_core.errors import ConnectorError
from cdc_sqlserver import config as msc
from cdc_sqlserver import driver_values

#: Preferred drivers, best first: Microsoft's (18, then 17), then FreeTDS.
PREFERRED_DRIVERS = ("ODBC Driver 18 for SQL Server", "ODBC Driver 17 for SQL Server", "FreeTDS")

_log = logging.getLogger("cdc_sqlserver.odbc")


def _pyodbc_connect(connection_string: str, **kwargs: Any) -> Any:
    """pyodbc.connect, imported only when a connection is made."""
    import pyodbc  # lazily: cdc-core must run without it

    return pyodbc.connect(connection_string, **kwargs)


def _pyodbc_drivers() -> list[str]:
    """The ODBC drivers unixODBC knows (pyodbc.drivers())."""
    import pyodbc

    return list(pyodbc.drivers())


#: ``(connection_string, autocommit=..., timeout=...) -> connection``; replaced by the tests' stand-in only.
CONNECT: Callable[..., Any] = _pyodbc_connect
#: The installed ODBC drivers' names.
DRIVERS: Callable[[], list[str]] = _pyodbc_drivers


def install(connect: Callable[..., Any], drivers: Callable[[], list[str]]) -> None:
    """Route every connection through ``connect`` (the tests' stand-in); production never calls this."""
    global CONNECT, DRIVERS
    CONNECT, DRIVERS = connect, drivers


def choose_driver(config: Config) -> str:
    """The ODBC driver: ``driver.Driver`` if given, else Microsoft's ODBC Driver 18/17, else FreeTDS."""
    chosen = msc.driver_properties(config).get("Driver") or msc.driver_properties(config).get("driver")
    installed = DRIVERS()
    if chosen:
        _log.info("ODBC driver %s (driver.Driver)", chosen)
        return chosen.strip("{}")
    for name in PREFERRED_DRIVERS:
        if name in installed:
            _log.info("ODBC driver %s (found among: %s)", name, ", ".join(installed))
            return name
    for name in installed:
        if "SQL Server" in name:
            _log.info("ODBC driver %s (found among: %s)", name, ", ".join(installed))
            return name
    raise ConnectorError(
        "no ODBC driver for SQL Server is installed (looked for " + ", ".join(PREFERRED_DRIVERS) + "; installed: "
        + (", ".join(installed) or "none") + "): install Microsoft ODBC Driver 18 (msodbcsql18) or FreeTDS "
        "(tdsodbc), or name one with driver.Driver")


def _value(text: str) -> str:
    """An ODBC connection-string value, braced where it holds ``;``, ``{`` or ``}`` (``}`` doubled)."""
    if any(c in text for c in ";{}") or text != text.strip():
        return "{" + text.replace("}", "}}") + "}"
    return text


def connection_string(config: Config, database: str) -> str:
    """The connection string for ``database`` from Debezium's properties (``driver.*`` passed through)."""
    driver = choose_driver(config)
    host = config.get(msc.HOSTNAME)
    instance = config.get(msc.INSTANCE)
    freetds = "FreeTDS" in driver
    if instance and msc.PORT.name not in config:
        server = f"{host}\\{instance}"  # the SQL Browser finds the port (Debezium: the port wins when both are set)
    else:
        server = f"{host},{config.get(msc.PORT)}"
    parts = {"Driver": "{" + driver + "}", "Server": server, "Database": _value(database)}
    if freetds:
        parts.update(Server=host, Port=str(config.get(msc.PORT)), TDS_Version="7.4")
    if config.get(msc.USER):
        parts["UID"] = _value(config.get(msc.USER))
        parts["PWD"] = _value(config.get(msc.PASSWORD) or "")
    if not freetds:
        parts["Encrypt"] = "yes" if config.get(msc.ENCRYPT) else "no"
        parts["TrustServerCertificate"] = "yes" if config.get(msc.TRUST_SERVER_CERTIFICATE) else "no"
        if config.get(msc.APPLICATION_INTENT):
            parts["ApplicationIntent"] = config.get(msc.APPLICATION_INTENT)
    for key, value in msc.driver_properties(config).items():
        if key.lower() != "driver":
            parts[key] = _value(value)
    return ";".join(f"{k}={v}" for k, v in parts.items())


#: ``driver.Driver`` value that routes connections to the test stand-in (``cdc_sqlserver.standin``, extra
#: ``standin``) in processes a test cannot set the seam in (Spark's Python workers). Never used in production.
STANDIN_DRIVER = "cdc stand-in"


#: Microsoft's ODBC driver, by name ("ODBC Driver 18 for SQL Server") or library (libmsodbcsql-18.so).
_MICROSOFT_DRIVER = re.compile(r"ODBC Driver \d+ for SQL Server|msodbcsql", re.IGNORECASE)
#: ODBC SQL types: TIME (Microsoft's SQLNCLI.h), DATETIME/SMALLDATETIME/DATETIME2 (sql.h).
SQL_SS_TIME2, SQL_TYPE_TIMESTAMP = -154, 93
#: The ODBC type of CLR user-defined types (geometry, geography, hierarchyid): Microsoft's sqlncli.h/msodbcsql.h.
SQL_SS_UDT = -151


def _raw(value: Any) -> Any:
    """An output converter that keeps the driver's raw bytes (None for NULL)."""
    return value


def connect(config: Config, database: str, *, autocommit: bool = True) -> Any:
    """A connection to ``database``; the password never appears in an error."""
    named = {k.lower(): v for k, v in msc.driver_properties(config).items()}.get("driver")
    if CONNECT is _pyodbc_connect and named == STANDIN_DRIVER:
        from cdc_sqlserver.standin import dbapi

        dbapi.install()
    timeout = max(1, int(config.get(msc.QUERY_TIMEOUT_MS) / 1000)) if config.get(msc.QUERY_TIMEOUT_MS) else 0
    text = connection_string(config, database)
    conn = CONNECT(text, autocommit=autocommit)
    if timeout and hasattr(conn, "timeout"):
        conn.timeout = timeout
    add = getattr(conn, "add_output_converter", None)
    if add is not None:
        # Types pyodbc has no Python type for: their raw bytes (cdc_sqlserver.types.zoned reads DATETIMEOFFSET's
        # SQL_SS_TIMESTAMPOFFSET_STRUCT; SQL_VARIANT has no mapping and is never sent). SQL_SS_UDT (-151):
        # geometry, geography and hierarchyid, which pyodbc 5 refuses ("ODBC SQL type -151 is not yet
        # supported", getdata.cpp has no case for it): their serialized bytes, what mssql-jdbc's getObject
        # gives Debezium for a UDT column (cdc_sqlserver.types).
        add(-155, _raw)
        add(-150, _raw)
        add(SQL_SS_UDT, _raw)
        if _MICROSOFT_DRIVER.search(text.split(";", 1)[0]):
            # TIME and DATETIME2 with their 100 ns, as Debezium's JDBC driver reads them (pyodbc keeps
            # microseconds): Microsoft's driver's structs (cdc_sqlserver.driver_values). Other drivers' raw
            # forms differ (FreeTDS: its TDS bytes): with them, pyodbc's microseconds stay.
            add(SQL_SS_TIME2, driver_values.time2)
            add(SQL_TYPE_TIMESTAMP, driver_values.timestamp)
    return conn
