"""The ``source`` block of MySQL/MariaDB change events: its schema and how each event's block is made."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from cdc_core.schema import INT32, INT64, OPTIONAL_INT64, OPTIONAL_STRING, STRING, Schema, struct
from cdc_core.source import COMMON_SOURCE_FIELDS

from cdc_mysql.flavor import Flavor

#: The Debezium release whose event format cdc reproduces; written as ``source.version``.
DEBEZIUM_VERSION = "2.7.0.Final"

@lru_cache(maxsize=None)
def source_schema(flavor: Flavor) -> Schema:
    """The ``source`` struct in Debezium 2.7's field order: the common fields, then the binlog ones."""
    return struct(
        flavor.source_schema_name,
        [
            *COMMON_SOURCE_FIELDS,
            ("table", OPTIONAL_STRING),
            ("server_id", INT64),
            ("gtid", OPTIONAL_STRING),
            ("file", STRING),
            ("pos", INT64),
            ("row", INT32),
            ("thread", OPTIONAL_INT64),
            ("query", OPTIONAL_STRING),
        ],
    )


def source_block(connector: str, server: str, ts_ms: int, snapshot: str, db: str, table: str | None,
                 server_id: int, gtid: str | None, file: str, pos: int, row: int, thread: int | None,
                 query: str | None) -> dict[str, Any]:
    """One event's source block, keys in schema order (``ts_ms`` is the change's time in the database)."""
    return {
        "version": DEBEZIUM_VERSION, "connector": connector, "name": server, "ts_ms": ts_ms,
        "snapshot": snapshot, "db": db, "sequence": None, "ts_us": ts_ms * 1000, "ts_ns": ts_ms * 1_000_000,
        "table": table, "server_id": server_id, "gtid": gtid, "file": file, "pos": pos, "row": row,
        "thread": thread, "query": query,
    }
