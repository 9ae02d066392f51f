"""The part of every connector's ``source`` block that Debezium's common struct maker defines."""

from __future__ import annotations

from cdc_core.schema import INT64, OPTIONAL_INT64, OPTIONAL_STRING, STRING, Schema

#: Debezium's SnapshotRecord values. Several chapters print ``snapshot`` as a boolean, but
#: Debezium 2.7 writes a string enum (it also carries "incremental"); cdc does what Debezium does.
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
