"""Registers the MySQL connector through cdc's plugin hooks."""

from __future__ import annotations

from cdc_core.hookspecs import hookimpl


@hookimpl
def register_connectors() -> list[type]:
    """The MySQL connector."""
    from cdc_mysql.connector import MySqlConnector

    return [MySqlConnector]


@hookimpl
def register_cli_commands(subparsers: object) -> None:
    """``cdc ddl apply --dialect mysql|mariadb FILE.sql``."""
    from cdc_mysql.ddl_cli import register

    register(subparsers)


@hookimpl
def register_converters() -> list[type]:
    """Debezium's binlog converters (``io.debezium.connector.binlog.converters.*``)."""
    from cdc_mysql.converters import TinyIntOneToBooleanConverter

    return [TinyIntOneToBooleanConverter]
