"""Registers the Db2 connector through cdc's plugin hooks."""

from __future__ import annotations

from cdc_core.hookspecs import hookimpl
from cdc_core.plugins import LazyPlugin


#: The connector, imported only when ``connector.class`` names it (its module imports ibm_db).
CONNECTOR = LazyPlugin("cdc_db2.connector:Db2Connector", "db2",
                       ("io.debezium.connector.db2.Db2Connector",))


@hookimpl
def register_connectors() -> list[type | LazyPlugin]:
    """The Db2 connector."""
    return [CONNECTOR]
