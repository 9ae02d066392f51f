"""Streaming from a YugabyteDB slot: PostgreSQL's StreamReader with YugabyteDB's names, and yboutput's cells."""

from __future__ import annotations

from typing import Any

from cdc_postgres.pgoutput import Message, Relation
from cdc_postgres.relations import relation_table
from cdc_postgres.streaming import StreamReader

from cdc_yugabyte.source import renamed
from cdc_yugabyte.yboutput import carried_columns, wrapped_table


class YbStreamReader(StreamReader):
    """pgoutput from a YugabyteDB slot: events say ``YugabyteDB``; no logical decoding message events (YB-17)."""

    def _source(self, schema: str, table: str, lsn: int, ts_us: int, tx: bool) -> dict[str, Any]:
        """PostgreSQL's source block, saying ``YugabyteDB``."""
        return renamed(super()._source(schema, table, lsn, ts_us, tx))

    def _message(self, msg: Message, lsn: int, append) -> None:
        """YugabyteDB's connector emits no message events."""


class YbOutputStreamReader(YbStreamReader):
    """yboutput (pgoutput's protocol) into RawChanges of cell-wrapped tables."""

    def _change(self, msg, lsn: int, append) -> None:
        """A row change whose key tuple carries the key only."""
        table = self.tables.get(msg.relation_oid)
        if table is not None:
            msg = carried_columns(msg, table)
        super()._change(msg, lsn, append)

    def _relation(self, rel: Relation) -> None:
        """Encode the next changes with the Relation's columns, wrapped (a new version only if they changed)."""
        plains = self.__dict__.setdefault("_plain_tables", {})
        plain = plains.get(rel.oid)
        fresh = relation_table(rel, plain, self.catalog)
        if fresh is None or fresh is plain:
            return
        if plain is not None:
            self.log.info("table %s changed; columns: %s", fresh.id,
                          ", ".join(f"{c.name} {c.type_name}" for c in fresh.columns))
        plains[rel.oid] = fresh
        self.tables[rel.oid] = wrapped_table(fresh)
