"""Schema history: every table definition change with its binlog position, through the history store SPI.

Each record is Debezium's history record (``source``, ``position``, ``databaseName``, ``ddl``,
``tableChanges``) plus ``version``. Recovery replays the records whose position is at or before
the resume point: definitions from ``tableChanges`` (no re-parsing), database charsets from the DDL.
"""

from __future__ import annotations

import time
from typing import Any

from cdc_core.errors import SchemaHistoryError

from cdc_mysql.ddl import SchemaModel, UnparseableDdl
from cdc_mysql.model import TableChange, TableDef, parse_quoted_id

HISTORY_VERSION = 1


def position_key(position: dict[str, Any]) -> tuple[str, int, int]:
    """Sortable binlog position: (file, pos, snapshot-first)."""
    return (str(position.get("file") or ""), int(position.get("pos") or 0), 0 if position.get("snapshot") else 1)


class SchemaHistory:
    """Appends and replays the connector's schema history records."""

    def __init__(self, store: Any, server: str, metrics: Any = None):
        self.store = store
        self.server = server
        #: ``cdc_mysql.metrics.SchemaHistoryMetrics`` to report recovery and applied changes to, if any.
        self.metrics = metrics
        if metrics is not None:
            metrics.running()

    def exists(self) -> bool:
        """True if the store holds any record."""
        return self.store.exists()

    def record(self, position: dict[str, Any], database: str | None, ddl: str, changes: list[TableChange]) -> dict[str, Any]:
        """Durably append one record; returns it."""
        record = {
            "version": HISTORY_VERSION,
            "source": {"server": self.server},
            "position": position,
            "ts_ms": time.time_ns() // 1_000_000,
            "databaseName": database or "",
            "schemaName": None,
            "ddl": ddl,
            "tableChanges": [c.to_json() for c in changes],
        }
        self.store.append(record)
        if self.metrics is not None:
            self.metrics.applied(record)
        return record

    def recover(self, model: SchemaModel, until: dict[str, Any] | None) -> int:
        """Replay every record at or before ``until`` (all of them if None) into ``model``; returns the count."""
        limit = position_key(until) if until is not None else None
        count = 0
        metrics = self.metrics
        if metrics is not None:
            metrics.recovery_started()
        try:
            for record in self.store.records():
                if not isinstance(record, dict) or "position" not in record:
                    raise SchemaHistoryError(f"schema history record without a position: {str(record)[:200]}")
                if metrics is not None:
                    metrics.recovered(record)
                if limit is not None and position_key(record["position"])[:2] > limit[:2]:
                    continue
                self._apply(model, record)
                if metrics is not None:
                    metrics.applied(record)
                count += 1
        finally:
            if metrics is not None:
                metrics.running()
        return count

    @staticmethod
    def _apply(model: SchemaModel, record: dict[str, Any]) -> None:
        """Apply one record: its ``tableChanges``, or (for database-level DDL) the statement itself."""
        changes = record.get("tableChanges") or []
        for change in changes:
            table_id = parse_quoted_id(change["id"])
            if change["type"] == "DROP":
                model.tables.pop(table_id, None)
                continue
            if change.get("previousId"):
                model.tables.pop(parse_quoted_id(change["previousId"]), None)
            elif "," in change["id"].replace('"."', ""):  # histories written before previousId: "old","new"
                model.tables.pop(parse_quoted_id(change["id"].split('","')[0] + '"'), None)
            model.put(TableDef.from_change_json(table_id, change["table"]))
        if not changes and record.get("ddl"):
            try:
                model.apply(record["ddl"], record.get("databaseName") or None)
            except UnparseableDdl:
                pass
