"""The ``source`` block of YugabyteDB change events: PostgreSQL's, with the YugabyteDB chapter's names."""

from __future__ import annotations

from typing import Any

from cdc_core.schema import Schema
from cdc_postgres.source import SOURCE_SCHEMA as PG_SOURCE_SCHEMA

#: ``source.connector`` of every event (the chapter's examples: ``"connector": "YugabyteDB"``).
CONNECTOR = "YugabyteDB"

#: PostgreSQL's source struct under the chapter's name ``io.debezium.connector.YugabyteDB.Source``.
SOURCE_SCHEMA: Schema = Schema("struct", name="io.debezium.connector.YugabyteDB.Source",
                               fields=PG_SOURCE_SCHEMA.fields)


def renamed(source: dict[str, Any]) -> dict[str, Any]:
    """The same source block, saying ``YugabyteDB`` (changed in place: the block is the event's own)."""
    source["connector"] = CONNECTOR
    return source
