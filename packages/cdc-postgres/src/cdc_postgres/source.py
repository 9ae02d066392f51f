"""The ``source`` block of PostgreSQL change events: its schema and how each event's block is made."""

from __future__ import annotations

from typing import Any

from cdc_core.schema import OPTIONAL_INT64, STRING, struct
from cdc_core.source import COMMON_SOURCE_FIELDS, DEBEZIUM_VERSION, common_source

__all__ = ["CONNECTOR", "DEBEZIUM_VERSION", "SOURCE_SCHEMA", "sequence", "source_block"]

CONNECTOR = "postgresql"

#: The common fields (``cdc_core.source``), then the PostgreSQL ones, as PostgresSourceInfoStructMaker builds it.
SOURCE_SCHEMA = struct(
    "io.debezium.connector.postgresql.Source",
    [
        *COMMON_SOURCE_FIELDS,
        ("schema", STRING),
        ("table", STRING),
        ("txId", OPTIONAL_INT64),
        ("lsn", OPTIONAL_INT64),
        ("xmin", OPTIONAL_INT64),
    ],
)


def source_block(
    server: str, db: str, ts_us: int, snapshot: str, schema: str, table: str,
    tx_id: int | None, lsn: int | None, sequence: str | None,
) -> dict[str, Any]:
    """One event's source block, keys in schema order."""
    return {
        **common_source(CONNECTOR, server, db, ts_us, snapshot, sequence),
        "schema": schema,
        "table": table,
        "txId": tx_id,
        "lsn": lsn,
        "xmin": None,
    }


def sequence(last_commit_lsn: int | None, lsn: int | None) -> str:
    """Debezium's ``sequence``: a JSON array of the last commit LSN and this event's LSN, as strings."""
    a = "null" if last_commit_lsn is None else f'"{last_commit_lsn}"'
    b = "null" if lsn is None else f'"{lsn}"'
    return f"[{a},{b}]"
