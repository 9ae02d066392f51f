"""Registers the Db2 connector through cdc's plugin hooks."""

from __future__ import annotations

from cdc_core.hookspecs import hookimpl


@hookimpl
def register_connectors() -> list[type]:
    """The Db2 connector."""
    from cdc_db2.connector import Db2Connector

    return [Db2Connector]
