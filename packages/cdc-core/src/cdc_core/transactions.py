"""Transaction metadata: BEGIN/END events on ``<prefix>.transaction`` and the envelope's ``transaction`` block."""

from __future__ import annotations

from typing import Any

from cdc_core.events import ChangeRecord
from cdc_core.schema import INT64, OPTIONAL_INT64, STRING, Schema, struct

#: Debezium's SchemaFactory names and versions for transaction metadata.
KEY_SCHEMA = struct("io.debezium.connector.common.TransactionMetadataKey", [("id", STRING)], version=1)
# Required in 2.7.4's SchemaFactory; Debezium 3.0 made it optional (DIFFERENCES.md).
DATA_COLLECTION = struct(
    "event.collection", [("data_collection", STRING), ("event_count", INT64)], version=1
)
# Field order as 2.7.4's SchemaFactory.transactionValueSchema builds it (the chapter's example
# prints ts_ms third, but the JsonConverter writes the schema's order).
VALUE_SCHEMA = struct(
    "io.debezium.connector.common.TransactionMetadataValue",
    [
        ("status", STRING),
        ("id", STRING),
        ("event_count", OPTIONAL_INT64),
        ("data_collections", Schema("array", optional=True, items=DATA_COLLECTION)),
        ("ts_ms", INT64),
    ],
    version=1,
)

#: Offset keys under which an open transaction's counters survive a restart.
OFFSET_ID, OFFSET_TOTAL, OFFSET_COLLECTIONS = "transaction_id", "transaction_total_order", "transaction_data_collection_order"


class TransactionTracker:
    """Numbers events within their transaction and writes BEGIN/END records.

    The counters of an open transaction are stored in each event's offset, so a restart in the
    middle of a transaction continues its numbering and does not repeat its BEGIN. A transaction
    is known by its ``transaction_id``; the id written on each record may differ per record
    (PostgreSQL writes ``<txId>:<LSN>`` of the BEGIN, of each change and of the commit).
    """

    def __init__(self, topic: str):
        self.topic = topic
        self.id: str | None = None
        self.total = 0
        self.per_collection: dict[str, int] = {}
        self.ts_ms: int | None = None
        self._last_written: str | None = None

    def restore(self, offset: dict[str, Any] | None) -> None:
        """Continue an open transaction recorded in a committed offset."""
        if offset and offset.get(OFFSET_ID):
            self.id = offset[OFFSET_ID]
            self.total = int(offset.get(OFFSET_TOTAL) or 0)
            self.per_collection = dict(offset.get(OFFSET_COLLECTIONS) or {})

    def _record(self, status: str, written_id: str, ts_ms: int | None, offset: dict | None) -> ChangeRecord:
        end = status == "END"
        value = {
            "status": status,
            "id": written_id,
            "event_count": self.total if end else None,
            "data_collections": [{"data_collection": c, "event_count": n} for c, n in self.per_collection.items()]
            if end else None,
            "ts_ms": ts_ms or 0,
        }
        return ChangeRecord(self.topic, {"id": written_id}, value, KEY_SCHEMA, VALUE_SCHEMA, offset)

    def begin(self, tid: str, ts_ms: int | None, written_id: str | None, out: list) -> None:
        """A transaction announced by the connector: append its BEGIN (not again for the one a restart continues)."""
        if tid == self.id:
            return
        if self.id is not None:
            # Ended by the next transaction's first event: Debezium's TransactionMonitor.dataEvent writes the END
            # with that event's timestamp (endTransaction(partition, offset, eventTimestamp)).
            out.append(self._record("END", self._last_written or self.id, ts_ms if ts_ms is not None else self.ts_ms,
                                    None))
        self.id, self.total, self.per_collection, self.ts_ms = tid, 0, {}, ts_ms
        self._last_written = written_id
        out.append(self._record("BEGIN", written_id or tid, ts_ms, None))

    def event(self, tid: str, collection: str, ts_ms: int, offset: dict[str, Any], out: list,
              written_id: str | None = None) -> dict[str, Any]:
        """Account one data event of ``tid`` (appending a BEGIN first if it opens); return its ``transaction`` block.

        ``written_id`` is the id to write in the block where it differs from ``tid``.
        """
        if tid != self.id:
            self.begin(tid, ts_ms, written_id, out)
        self._last_written = written_id
        self.total += 1
        order = self.per_collection[collection] = self.per_collection.get(collection, 0) + 1
        offset[OFFSET_ID] = tid
        offset[OFFSET_TOTAL] = self.total
        offset[OFFSET_COLLECTIONS] = dict(self.per_collection)
        return {"id": written_id or tid, "total_order": self.total, "data_collection_order": order}

    def second_event(self, block: dict[str, Any], collection: str, offset: dict[str, Any]) -> dict[str, Any]:
        """The block of a second event made from the same change (the create of a key change, after its delete)."""
        self.total += 1
        order = self.per_collection[collection] = self.per_collection.get(collection, 0) + 1
        offset[OFFSET_TOTAL] = self.total
        offset[OFFSET_COLLECTIONS] = dict(self.per_collection)
        return {"id": block["id"], "total_order": self.total, "data_collection_order": order}

    def end(self, tid: str, offset: dict[str, Any], ts_ms: int | None, written_id: str | None = None) -> ChangeRecord | None:
        """The END record of ``tid`` carrying ``offset``, or None if it was not begun."""
        if tid != self.id:
            return None
        record = self._record("END", written_id or tid, ts_ms if ts_ms is not None else self.ts_ms, offset)
        self.id, self.total, self.per_collection = None, 0, {}
        return record
