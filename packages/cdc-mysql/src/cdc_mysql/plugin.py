"""Registers the MySQL connector through cdc's plugin hooks."""

from __future__ import annotations

from cdc_core.hookspecs import hookimpl
from cdc_core.plugins import LazyPlugin
from cdc_mysql.flavor import MYSQL

#: The connector, imported only when ``connector.class`` names it (its module imports pymysql and sqlglot).
CONNECTOR = LazyPlugin("cdc_mysql.connector:MySqlConnector", MYSQL.name, MYSQL.class_names)


@hookimpl
def register_connectors() -> list[type | LazyPlugin]:
    """The MySQL connector."""
    return [CONNECTOR]


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
