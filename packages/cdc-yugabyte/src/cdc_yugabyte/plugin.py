"""Registers the YugabyteDB connector through cdc's plugin hooks."""

from __future__ import annotations

from cdc_core.hookspecs import hookimpl
from cdc_core.plugins import LazyPlugin


#: The connector, imported only when ``connector.class`` names it (its module imports psycopg).
CONNECTOR = LazyPlugin("cdc_yugabyte.connector:YugabyteDBConnector", "yugabytedb", (
    "io.debezium.connector.postgresql.YugabyteDBConnector",  # YugabyteDB's connector since 2024.2
    "io.debezium.connector.YugabyteDB.YBPostgresConnector",  # the chapter's property table
    "io.debezium.connector.YugabyteDB.PostgresConnector",  # the chapter's configuration example
    "yugabyte",
))


@hookimpl
def register_connectors() -> list[type | LazyPlugin]:
    """The YugabyteDB connector."""
    return [CONNECTOR]
