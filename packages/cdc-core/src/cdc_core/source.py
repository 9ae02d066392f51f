"""The part of every connector's ``source`` block that Debezium's common struct maker defines."""

from __future__ import annotations

from typing import Any

from cdc_core.schema import INT64, OPTIONAL_INT64, OPTIONAL_STRING, STRING, Schema

#: Debezium's SnapshotRecord values. Several chapters print ``snapshot`` as a boolean, but
#: Debezium 2.7 writes a string enum (it also carries "incremental"); cdc does what Debezium does.
#: The ``allowed`` list is 3.0's (every SnapshotRecord value): 2.7.4's AbstractSourceInfoStructMaker
#: declares only "true,last,false,incremental" while it writes "first", "first_in_data_collection" and
#: "last_in_data_collection" too (its SnapshotRecord has all seven), a schema its own values break;
#: 3.0 lists them all, and cdc writes all seven, so it keeps the list that describes what it writes
#: (the conformance suite compares with 3.0.7 field by field).
SNAPSHOT_ENUM = Schema(
    "string",
    optional=True,
    name="io.debezium.data.Enum",
    version=1,
    parameters={"allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"},
    default="false",
)

#: The common fields in Debezium 2.7's order (AbstractSourceInfoStructMaker.commonSchemaBuilder);
#: each connector appends its own fields after them.
COMMON_SOURCE_FIELDS: tuple[tuple[str, Schema], ...] = (
    ("version", STRING),
    ("connector", STRING),
    ("name", STRING),
    ("ts_ms", INT64),
    ("snapshot", SNAPSHOT_ENUM),
    ("db", STRING),
    ("sequence", OPTIONAL_STRING),
    ("ts_us", OPTIONAL_INT64),
    ("ts_ns", OPTIONAL_INT64),
)

#: The Debezium release whose event format cdc reproduces; written as ``source.version``.
DEBEZIUM_VERSION = "2.7.0.Final"


def common_source(connector: str, server: str, db: str, ts_us: int, snapshot: str,
                  sequence: str | None = None) -> dict[str, Any]:
    """The common fields of one event's source block, in COMMON_SOURCE_FIELDS order (connector fields follow)."""
    return {
        "version": DEBEZIUM_VERSION,
        "connector": connector,
        "name": server,
        "ts_ms": ts_us // 1000,
        "snapshot": snapshot,
        "db": db,
        "sequence": sequence,
        "ts_us": ts_us,
        "ts_ns": ts_us * 1000,
    }
