"""The ``source`` block of Db2 change events, as Db2SourceInfoStructMaker builds it (no ``event_serial_no``)."""

from __future__ import annotations

from typing import Any

from cdc_core.schema import OPTIONAL_STRING, STRING, struct
from cdc_core.source import COMMON_SOURCE_FIELDS, DEBEZIUM_VERSION, common_source

__all__ = ["CONNECTOR", "DEBEZIUM_VERSION", "SOURCE_SCHEMA", "source_block"]

CONNECTOR = "db2"

SOURCE_SCHEMA = struct(
    "io.debezium.connector.db2.Source",
    [
        *COMMON_SOURCE_FIELDS,
        ("schema", STRING),
        ("table", STRING),
        ("change_lsn", OPTIONAL_STRING),
        ("commit_lsn", OPTIONAL_STRING),
    ],
)


def source_block(server: str, db: str, ts_us: int, snapshot: str, schema: str, table: str,
                 change_lsn: str | None, commit_lsn: str | None) -> dict[str, Any]:
    """One event's source block, keys in schema order (``sequence`` is never set by this connector)."""
    return {
        **common_source(CONNECTOR, server, db, ts_us, snapshot),
        "schema": schema,
        "table": table,
        "change_lsn": change_lsn,
        "commit_lsn": commit_lsn,
    }
