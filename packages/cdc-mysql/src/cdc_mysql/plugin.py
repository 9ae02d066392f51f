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
    from cdc_mysql.converters import JdbcSinkDataTypesConverter, TinyIntOneToBooleanConverter

    return [TinyIntOneToBooleanConverter, JdbcSinkDataTypesConverter]


@hookimpl
def register_snapshot_locks() -> list[type]:
    """``snapshot.locking.mode`` minimal, minimal_percona and extended (``none`` is the core's)."""
    from cdc_mysql.snapshot_locks import BUILTIN_LOCKS

    return list(BUILTIN_LOCKS)
