"""Registers the MariaDB connector through cdc's plugin hooks."""

from __future__ import annotations

from cdc_core.hookspecs import hookimpl


@hookimpl
def register_connectors() -> list[type]:
    """The MariaDB connector."""
    from cdc_mariadb.connector import MariaDbConnector

    return [MariaDbConnector]
