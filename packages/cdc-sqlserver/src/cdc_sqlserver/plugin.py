"""Registers the SQL Server connector through cdc's plugin hooks."""

from __future__ import annotations

from cdc_core.hookspecs import hookimpl
from cdc_core.plugins import LazyPlugin


#: The connector, imported only when ``connector.class`` names it (its module imports pyodbc).
CONNECTOR = LazyPlugin("cdc_sqlserver.connector:SqlServerConnector", "sqlserver",
                       ("io.debezium.connector.sqlserver.SqlServerConnector",))


@hookimpl
def register_connectors() -> list[type | LazyPlugin]:
    """The SQL Server connector."""
    return [CONNECTOR]


@hookimpl
def register_topic_naming_strategies() -> list[type]:
    """``<prefix>.<database>.<schema>.<table>``: the SQL Server connector's default topic names."""
    from cdc_sqlserver.topics import SqlServerTopicNamingStrategy

    return [SqlServerTopicNamingStrategy]
