"""Registers the MariaDB connector through cdc's plugin hooks."""

from __future__ import annotations

from cdc_core.hookspecs import hookimpl
from cdc_core.plugins import LazyPlugin
from cdc_mariadb.flavor import MARIADB

#: The connector, imported only when ``connector.class`` names it (its module imports pymysql and sqlglot).
CONNECTOR = LazyPlugin("cdc_mariadb.connector:MariaDbConnector", MARIADB.name, MARIADB.class_names)


@hookimpl
def register_connectors() -> list[type | LazyPlugin]:
    """The MariaDB connector."""
    return [CONNECTOR]
