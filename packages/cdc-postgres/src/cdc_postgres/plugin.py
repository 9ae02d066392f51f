"""Registers the PostgreSQL connector and its demo through cdc's plugin hooks."""

from __future__ import annotations

from cdc_core.hookspecs import hookimpl


@hookimpl
def register_connectors() -> list[type]:
    """The PostgreSQL connector."""
    from cdc_postgres.connector import PostgresConnector

    return [PostgresConnector]


@hookimpl
def register_demos() -> list[tuple[str, object]]:
    """``cdc demo postgres``: a throwaway PostgreSQL streaming to the terminal."""
    from cdc_postgres.demo import main

    return [("postgres", main)]
