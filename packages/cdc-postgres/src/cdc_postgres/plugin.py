"""Registers the PostgreSQL connector and its demo through cdc's plugin hooks."""

from __future__ import annotations

from cdc_core.hookspecs import hookimpl
from cdc_core.plugins import LazyPlugin


#: The connector, imported only when ``connector.class`` names it (its module imports psycopg).
CONNECTOR = LazyPlugin("cdc_postgres.connector:PostgresConnector", "postgres",
                       ("io.debezium.connector.postgresql.PostgresConnector", "postgresql"))


@hookimpl
def register_connectors() -> list[type | LazyPlugin]:
    """The PostgreSQL connector."""
    return [CONNECTOR]


@hookimpl
def register_demos() -> list[tuple[str, object]]:
    """``cdc demo postgres``: a throwaway PostgreSQL streaming to the terminal."""
    from cdc_postgres.demo import main

    return [("postgres", main)]
