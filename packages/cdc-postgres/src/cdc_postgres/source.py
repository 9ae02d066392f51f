"""The ``source`` block of PostgreSQL change events: its schema and how each event's block is made."""

from __future__ import annotations

from typing import Any

from cdc_core.schema import OPTIONAL_INT64, STRING, struct
from cdc_core.source import COMMON_SOURCE_FIELDS

#: The Debezium release whose event format cdc reproduces; written as ``source.version``.
DEBEZIUM_VERSION = "2.7.0.Final"
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
        "version": DEBEZIUM_VERSION,
        "connector": CONNECTOR,
        "name": server,
        "ts_ms": ts_us // 1000,
        "snapshot": snapshot,
        "db": db,
        "sequence": sequence,
        "ts_us": ts_us,
        "ts_ns": ts_us * 1000,
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
