"""Registers the SQL Server connector through cdc's plugin hooks."""

from __future__ import annotations

from cdc_core.hookspecs import hookimpl


@hookimpl
def register_connectors() -> list[type]:
    """The SQL Server connector."""
    from cdc_sqlserver.connector import SqlServerConnector

    return [SqlServerConnector]


@hookimpl
def register_topic_naming_strategies() -> list[type]:
    """``<prefix>.<database>.<schema>.<table>``: the SQL Server connector's default topic names."""
    from cdc_sqlserver.topics import SqlServerTopicNamingStrategy

    return [SqlServerTopicNamingStrategy]
