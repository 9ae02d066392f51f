"""Turning a connector's RawChanges into Debezium change records: key, envelope, topic and schemas.

Per table version the builder compiles a ``TableEvents``: the Key/Value/Envelope schemas and
generated functions that convert a raw row into the value struct in one call, so the per-event
work is a dict literal and the column converters, nothing more.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Sequence
from typing import Any

from cdc_core.config import Config
from cdc_core.config import common
from cdc_core.events import UNAVAILABLE, ChangeRecord, Checkpoint, RawChange
from cdc_core.filters import ColumnFilter
from cdc_core.heartbeat import Heartbeat
from cdc_core.relational import Column, Table
from cdc_core.schema import INT64, OPTIONAL_INT64, STRING, Schema, struct
from cdc_core.topics import DefaultTopicNamingStrategy
from cdc_core.transactions import TransactionTracker

#: The ``transaction`` block of every envelope (null unless provide.transaction.metadata is on).
TRANSACTION_BLOCK = struct(
    "event.block", [("id", STRING), ("total_order", INT64), ("data_collection_order", INT64)], optional=True, version=1
)

#: Debezium's default ``unavailable.value.placeholder``.
UNAVAILABLE_PLACEHOLDER = "__debezium_unavailable_value"


def envelope_schema(name: str, value: Schema, source: Schema) -> Schema:
    """The Envelope struct, fields in Debezium 2.7's order (version 1, as Envelope.SCHEMA_VERSION)."""
    return struct(
        name,
        [
            ("before", value),
            ("after", value),
            ("source", source),
            ("op", STRING),
            ("ts_ms", OPTIONAL_INT64),
            ("ts_us", OPTIONAL_INT64),
            ("ts_ns", OPTIONAL_INT64),
            ("transaction", TRANSACTION_BLOCK),
        ],
        version=1,
    )


def _placeholder_for(column: Column) -> Any:
    if column.schema.type == "string":
        return UNAVAILABLE_PLACEHOLDER
    if column.schema.type == "bytes":
        return base64.b64encode(UNAVAILABLE_PLACEHOLDER.encode()).decode()
    return None


#: Debezium's fallback for a NULL in a non-optional column (JdbcValueConverters): the type's zero.
_ZERO_BY_TYPE = {"int8": 0, "int16": 0, "int32": 0, "int64": 0, "float32": 0.0, "float64": 0.0,
                 "boolean": False, "string": "", "bytes": ""}
_ZERO_BY_NAME = {"org.apache.kafka.connect.data.Decimal": "AA==",
                 "io.debezium.data.VariableScaleDecimal": {"scale": 0, "value": "AA=="}}


def fallback_value(column: Column) -> Any:
    """What Debezium writes for a NULL in a non-optional column: its default, else the type's zero.

    This happens where the log omits values, e.g. the non-key columns of a REPLICA IDENTITY
    DEFAULT delete.
    """
    schema = column.schema
    if schema.default is not None:
        return schema.default
    if schema.name in _ZERO_BY_NAME:
        return _ZERO_BY_NAME[schema.name]
    return _ZERO_BY_TYPE.get(schema.type)


def compile_row_function(columns: list[tuple[int, Column]], with_unavailable: bool) -> Callable[[Sequence[Any]], dict]:
    """Generate ``row(values) -> dict`` for the given (raw index, column) pairs.

    The generated code reads each raw value once, turns None into None (or the fallback of a
    non-optional column), and calls the column's converter otherwise; ``with_unavailable`` adds the placeholder for unchanged TOASTed values.
    """
    env: dict[str, Any] = {"U": UNAVAILABLE}
    lines = ["def row(v):"]
    items = []
    for n, (index, column) in enumerate(columns):
        env[f"c{n}"] = column.convert
        env[f"p{n}"] = _placeholder_for(column)
        env[f"f{n}"] = None if column.schema.optional else fallback_value(column)
        lines.append(f"    x{n} = v[{index}]")
        expr = f"f{n} if x{n} is None else c{n}(x{n})"
        if with_unavailable:
            expr = f"p{n} if x{n} is U else ({expr})"
        items.append(f"{column.name!r}: {expr}")
    lines.append("    return {" + ", ".join(items) + "}")
    exec(compile("\n".join(lines), "<cdc row converter>", "exec"), env)
    return env["row"]


class TableEvents:
    """Everything needed to build one table version's records: topic, schemas and row functions."""

    __slots__ = ("table", "topic", "key_schema", "value_schema", "envelope", "row", "row_toast", "key")

    def __init__(self, table: Table, config: Config, source_schema: Schema, topics: DefaultTopicNamingStrategy):
        column_filter = ColumnFilter(config)
        included = [(i, c) for i, c in enumerate(table.columns) if column_filter.includes(table.id, c.name)]
        prefix = topics.record_schema_prefix(table.id)
        self.table = table
        self.topic = topics.data_topic(table.id)
        self.value_schema = struct(f"{prefix}.Value", [(c.name, c.schema) for _, c in included], optional=True)
        self.envelope = envelope_schema(f"{prefix}.Envelope", self.value_schema, source_schema)
        # Debezium always keys by the primary key, even where the column filters drop its columns
        # from the value; so the key is converted from the raw row, not taken from the value.
        if table.primary_key:
            positions = {c.name: i for i, c in enumerate(table.columns)}
            key_columns = [(positions[name], table.column(name)) for name in table.primary_key]
            self.key_schema = struct(f"{prefix}.Key", [(c.name, c.schema.with_optional(False)) for _, c in key_columns])
            self.key = compile_row_function(key_columns, with_unavailable=False)
        else:
            self.key_schema = None
            self.key = None
        self.row = compile_row_function(included, with_unavailable=False)
        self.row_toast = compile_row_function(included, with_unavailable=True)


class EventBuilder:
    """Builds ChangeRecords from RawChanges: compiled converters, tombstones, key changes,
    skipped operations, transaction metadata and heartbeats."""

    def __init__(self, config: Config, source_schema: Schema, partition: dict[str, Any]):
        self.config = config
        self.source_schema = source_schema
        self.partition = partition
        self.topics = DefaultTopicNamingStrategy(config)
        self.tombstones = config.get(common.TOMBSTONES_ON_DELETE)
        self.skipped = frozenset(config.get(common.SKIPPED_OPERATIONS))
        self.skip_unchanged = config.get(common.SKIP_MESSAGES_WITHOUT_CHANGE)
        self.transactions = (
            TransactionTracker(self.topics.transaction_topic())
            if config.get(common.PROVIDE_TRANSACTION_METADATA) else None
        )
        self.heartbeat = Heartbeat(
            config.get(common.HEARTBEAT_INTERVAL_MS), self.topics.heartbeat_topic(), self.topics.prefix
        )
        self._tables: dict[int, TableEvents] = {}

    def restore(self, offset: dict[str, Any] | None) -> None:
        """Continue from a committed offset (an open transaction's numbering)."""
        if self.transactions is not None:
            self.transactions.restore(offset)

    def table_events(self, table: Table) -> TableEvents:
        """The compiled TableEvents of a table version (built on first use)."""
        found = self._tables.get(id(table))
        if found is None or found.table is not table:
            found = self._tables[id(table)] = TableEvents(table, self.config, self.source_schema, self.topics)
        return found

    def _checkpoint(self, cp: Checkpoint, append: Callable[[Any], None]) -> None:
        if cp.transaction_end is not None and self.transactions is not None:
            end = self.transactions.end(cp.transaction_end, cp.offset, cp.ts_ms)
            if end is not None:
                append(end)
                return
        if self.heartbeat.due():
            append(self.heartbeat.record(cp.offset))
        else:
            append(cp)

    def build(self, changes: list[RawChange | Checkpoint | ChangeRecord]) -> list[ChangeRecord | Checkpoint]:
        """Convert a batch; ts_ms/ts_us/ts_ns are the processing time of the batch.

        When one change becomes several records (a delete and its tombstone; a key change), only
        the last carries the offset, so a batch boundary between them can never skip the rest.
        A skipped change leaves its offset behind as a Checkpoint. Ready-made ChangeRecords pass
        through; Checkpoints become END events or heartbeats when those are due.
        """
        now_ns = time.time_ns()
        ts_ms, ts_us = now_ns // 1_000_000, now_ns // 1_000
        out: list[ChangeRecord | Checkpoint] = []
        append = out.append
        partition = self.partition
        skipped, tx = self.skipped, self.transactions
        last_table = None
        te: TableEvents | None = None
        for ch in changes:
            cls = ch.__class__
            if cls is not RawChange:
                if cls is Checkpoint:
                    self._checkpoint(ch, append)
                else:
                    append(ch)
                continue
            op = ch.op
            if op in skipped:
                append(Checkpoint(ch.offset))
                continue
            if ch.table is not last_table:
                te = self.table_events(ch.table)
                last_table = ch.table
            assert te is not None
            before = None if ch.before is None else (te.row_toast(ch.before) if op == "u" else te.row(ch.before))
            after = None if ch.after is None else (te.row_toast(ch.after) if op == "u" else te.row(ch.after))
            if op == "u" and self.skip_unchanged and before == after:
                append(Checkpoint(ch.offset))
                continue
            block = None
            if tx is not None and ch.transaction_id is not None:
                block = tx.event(ch.transaction_id, ch.table.id.identifier, ch.source.get("ts_ms"), ch.offset, out)
            keyf = te.key
            keyed_row = ch.after if ch.after is not None else ch.before
            key = keyf(keyed_row) if keyf is not None and keyed_row is not None else None
            if op == "u" and keyf is not None and ch.before is not None and keyf(ch.before) != key:
                # A primary-key change: a delete of the old key, its tombstone, and a create of the new.
                old_key = keyf(ch.before)
                del_value = {"before": before, "after": None, "source": ch.source, "op": "d",
                             "ts_ms": ts_ms, "ts_us": ts_us, "ts_ns": now_ns, "transaction": block}
                headers = {"__debezium.newkey": key}
                append(ChangeRecord(te.topic, old_key, del_value, te.key_schema, te.envelope, None, headers, partition))
                if self.tombstones:  # a tombstone carries its delete's headers, as in Debezium
                    append(ChangeRecord(te.topic, old_key, None, te.key_schema, None, None, dict(headers), partition))
                value = {"before": None, "after": after, "source": ch.source, "op": "c",
                         "ts_ms": ts_ms, "ts_us": ts_us, "ts_ns": now_ns, "transaction": block}
                append(ChangeRecord(te.topic, key, value, te.key_schema, te.envelope, ch.offset,
                                    {"__debezium.oldkey": old_key}, partition))
                continue
            value = {"before": before, "after": after, "source": ch.source, "op": op,
                     "ts_ms": ts_ms, "ts_us": ts_us, "ts_ns": now_ns, "transaction": block}
            if op == "d" and self.tombstones:
                append(ChangeRecord(te.topic, key, value, te.key_schema, te.envelope, None, {}, partition))
                append(ChangeRecord(te.topic, key, None, te.key_schema, None, ch.offset, {}, partition))
            else:
                append(ChangeRecord(te.topic, key, value, te.key_schema, te.envelope, ch.offset, {}, partition))
        return out
