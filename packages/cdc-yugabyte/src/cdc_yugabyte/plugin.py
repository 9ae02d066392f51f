"""Registers the YugabyteDB connector through cdc's plugin hooks."""

from __future__ import annotations

from cdc_core.hookspecs import hookimpl


@hookimpl
def register_connectors() -> list[type]:
    """The YugabyteDB connector."""
    from cdc_yugabyte.connector import YugabyteDBConnector

    return [YugabyteDBConnector]
