"""The ``source`` block of PostgreSQL change events: its schema and how each event's block is made."""

from __future__ import annotations

from typing import Any

from cdc_core.schema import OPTIONAL_INT64, OPTIONAL_STRING, INT64, STRING, Schema, struct

#: The Debezium release whose event format cdc reproduces; written as ``source.version``.
DEBEZIUM_VERSION = "2.7.0.Final"
CONNECTOR = "postgresql"

#: Debezium's SnapshotRecord values. The chapter's example declares ``snapshot`` as a boolean, but
#: Debezium 2.7 writes a string enum (it carries "incremental" too); cdc does what Debezium does.
SNAPSHOT_ENUM = Schema(
    "string",
    optional=True,
    name="io.debezium.data.Enum",
    version=1,
    parameters={"allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"},
    default="false",
)

#: Field order as Debezium 2.7's PostgresSourceInfoStructMaker builds it: the common fields
#: (version, connector, name, ts_ms, snapshot, db, sequence, ts_us, ts_ns), then the PG ones.
SOURCE_SCHEMA = struct(
    "io.debezium.connector.postgresql.Source",
    [
        ("version", STRING),
        ("connector", STRING),
        ("name", STRING),
        ("ts_ms", INT64),
        ("snapshot", SNAPSHOT_ENUM),
        ("db", STRING),
        ("sequence", OPTIONAL_STRING),
        ("ts_us", OPTIONAL_INT64),
        ("ts_ns", OPTIONAL_INT64),
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
