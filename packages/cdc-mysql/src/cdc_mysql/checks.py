"""The server checks at start: binlog on, ROW format, FULL row images, the replication privileges.

Each failure is a ConnectorError that names the server and says what to change.
"""

from __future__ import annotations

from typing import Any

import pymysql

from cdc_core.errors import ConnectorError

from cdc_mysql.catalog import Catalog
from cdc_mysql.flavor import Flavor


def privilege_message(flavor: Flavor, address: str, user: str, detail: str) -> str:
    """The message for missing privileges: who, where, what is missing, and the GRANT that fixes it."""
    return (f"user {user!r} on {flavor.name} at {address} lacks privileges the connector needs ({detail}). "
            f"Grant what it needs with: GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT "
            f"ON *.* TO '{user}'@'%';")


def check_server(catalog: Catalog, flavor: Flavor, address: str, user: str, include_query: bool, log: Any) -> int:
    """Check the binlog settings and the replication privileges; return the server's ``server_id``."""
    where = f"{flavor.name} at {address}"
    if (catalog.variable("log_bin") or "OFF").upper() != "ON":
        raise ConnectorError(f"binary logging is disabled on {where}: the connector reads the binlog. Enable it "
                             f"(log_bin={flavor.binlog_example}, server_id=<n> under [mysqld]) and restart the server.")
    fmt = (catalog.variable("binlog_format") or "").upper()
    if fmt != "ROW":
        raise ConnectorError(f"{where} has binlog_format={fmt}; the connector needs ROW. Run SET GLOBAL "
                             "binlog_format = 'ROW' and set binlog_format=ROW in the server configuration.")
    image = (catalog.variable("binlog_row_image") or "FULL").upper()
    if image != "FULL":
        raise ConnectorError(f"{where} has binlog_row_image={image}; the connector needs FULL row images. Run "
                             "SET GLOBAL binlog_row_image = 'FULL' and set it in the server configuration.")
    value_options = (catalog.variable("binlog_row_value_options") or "").upper()
    if "PARTIAL_JSON" in value_options:
        raise ConnectorError(f"{where} has binlog_row_value_options=PARTIAL_JSON, which the connector cannot "
                             "read; run SET GLOBAL binlog_row_value_options = ''.")
    missing = []
    try:
        catalog.binlog_position()
    except pymysql.err.OperationalError as e:
        missing.append(f"{flavor.replication_client_privilege} (the server says: {e.args[-1]})")
    grants = " ".join(str(r[0]).upper() for r in catalog.query("SHOW GRANTS"))
    if not any(g in grants for g in ("REPLICATION SLAVE", "REPLICATION REPLICA", "ALL PRIVILEGES")):
        missing.append("REPLICATION SLAVE (to read the binlog)")
    if missing:
        raise ConnectorError(privilege_message(flavor, address, user, "missing: " + "; ".join(missing)))
    if include_query and (catalog.variable(flavor.query_log_variable) or "OFF").upper() != "ON":
        log.warning("include.query is set but %s is OFF on %s: events will carry no query",
                    flavor.query_log_variable, where)
    return int(catalog.query("SELECT @@server_id")[0][0])
