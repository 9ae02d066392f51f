"""Schema change events on the ``<topic.prefix>`` topic, from the DDL parser's TableChanges (cdc_core.schema_change_events)."""

from __future__ import annotations

from typing import Any

from cdc_core.events import ChangeRecord
from cdc_core.schema import Schema
from cdc_core.schema_change_events import schema_change_record as _record

from cdc_mysql.flavor import Flavor
from cdc_mysql.model import TableChange


def schema_change_record(flavor: Flavor, source_schema: Schema, topic: str, database: str, ddl: str,
                         changes: list[TableChange], source: dict[str, Any], offset: dict[str, Any] | None,
                         partition: dict[str, Any]) -> ChangeRecord:
    """The schema change event of one statement (``schemaName`` null: MySQL has no schemas apart from databases)."""
    return _record(flavor.name, source_schema, topic, database, None, ddl, [c.to_json() for c in changes], source,
                   offset, partition)
