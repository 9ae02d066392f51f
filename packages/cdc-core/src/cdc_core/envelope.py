"""Turning a connector's RawChanges into Debezium change records: key, envelope, topic and schemas.

Per table version the builder compiles a ``TableEvents``: the Key/Value/Envelope schemas and
generated functions that convert a raw row into the value struct in one call, so the per-event
work is a dict literal and the column converters, nothing more.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from itertools import repeat
from typing import Any

from cdc_core.config import Config
from cdc_core.config import common
from cdc_core.errors import ConnectorError
from cdc_core.events import ChangeRecord, Checkpoint, RawChange, TransactionBegin, new_record
from cdc_core.heartbeat import Heartbeat
from cdc_core.relational import Table
from cdc_core.schema import Schema
from cdc_core.table_events import EventSettings, TableEvents
from cdc_core.transactions import TransactionTracker

log = logging.getLogger("cdc.events")

#: The ops whose runs (same table, no ``before``, no transaction block) are built in one go.
_RUN_OPS = frozenset({"r", "c"})
#: Shorter runs are built one by one: converting column by column only pays off from a few rows.
_MIN_RUN = 8


def data_collection(tid: Any, with_catalog: bool = False) -> str:
    """The name transaction metadata counts a table under: Debezium's ``TableId.identifier()``.

    ``with_catalog``: the connector's Debezium TableIds carry the database beside the schema (SQL Server's:
    ``<database>.<schema>.<table>``); elsewhere ``schema.table`` or ``database.table`` (Db2's change tables
    have an empty catalog, so ``schema.table``)."""
    if with_catalog and tid.catalog is not None and tid.schema is not None:
        return f"{tid.catalog}.{tid.schema}.{tid.table}"
    return tid.identifier


class EventBuilder:
    """Builds ChangeRecords from RawChanges: compiled converters, tombstones, key changes,
    skipped operations, transaction metadata and heartbeats."""

    def __init__(self, config: Config, source_schema: Schema, partition: dict[str, Any], plugins: Any = None,
                 catalog_in_data_collection: bool = False):
        self.config = config
        self.settings = EventSettings(config, source_schema, plugins)
        self.partition = partition
        self.topics = self.settings.topics
        self.tombstones = config.get(common.TOMBSTONES_ON_DELETE)
        self.skipped = frozenset(config.get(common.SKIPPED_OPERATIONS))
        self.skip_unchanged = config.get(common.SKIP_MESSAGES_WITHOUT_CHANGE)
        self.failure_mode = config.get(common.FAILURE_HANDLING)
        self.transactions = (
            TransactionTracker(self.topics.transaction_topic())
            if config.get(common.PROVIDE_TRANSACTION_METADATA) else None
        )
        self.heartbeat = Heartbeat(
            config.get(common.HEARTBEAT_INTERVAL_MS), self.topics.heartbeat_topic(), self.topics.prefix
        )
        self._tables: dict[int, TableEvents] = {}
        #: Transaction metadata names tables ``<database>.<schema>.<table>`` (the connector class's
        #: ``catalog_in_data_collection``: SQL Server's).
        self.catalog_in_data_collection = catalog_in_data_collection

    def restore(self, offset: dict[str, Any] | None) -> None:
        """Continue from a committed offset (an open transaction's numbering)."""
        if self.transactions is not None:
            self.transactions.restore(offset)

    def table_events(self, table: Table) -> TableEvents:
        """The compiled TableEvents of a table version (built on first use)."""
        found = self._tables.get(id(table))
        if found is None or found.table is not table:
            found = self._tables[id(table)] = TableEvents(table, self.settings)
        return found

    def _failed(self, change: RawChange, error: Exception) -> None:
        """Apply ``event.processing.failure.handling.mode`` to a change that could not be converted."""
        where = f"a change of {change.table.id} (op {change.op}) at offset {change.offset}"
        if self.failure_mode == "fail":
            raise ConnectorError(
                f"cannot convert {where}: {error}. Set event.processing.failure.handling.mode=warn to skip such "
                "changes with a warning."
            ) from error
        if self.failure_mode == "warn":
            log.warning("skipping %s: %s", where, error)

    def _checkpoint(self, cp: Checkpoint, append: Callable[[Any], None]) -> None:
        if cp.transaction_end is not None and self.transactions is not None:
            end = self.transactions.end(cp.transaction_end, cp.offset, cp.ts_ms, cp.transaction_event_id)
            if end is not None:
                append(end)
                return
        if self.heartbeat.due() or self.heartbeat.forced(cp.heartbeat):
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
        out: list[ChangeRecord | Checkpoint] = []
        if len(changes) >= _MIN_RUN:
            self._build_runs(changes, out, now_ns)
        else:
            self._build_each(changes, out, now_ns)
        return out

    def _build_runs(self, changes: list, out: list, now_ns: int) -> None:
        """Runs of at least ``_MIN_RUN`` inserts/reads of one table without a transaction block are built
        in one go each (``_build_run``); everything else one by one (``_build_each``)."""
        tx_on, skipped = self.transactions is not None, self.skipped
        i, n, done = 0, len(changes), 0
        while i < n:
            ch = changes[i]
            i += 1
            if ch.__class__ is not RawChange or ch.before is not None or (tx_on and ch.transaction_id is not None):
                continue
            op, table, start = ch.op, ch.table, i - 1
            if op not in _RUN_OPS or op in skipped:
                continue
            while i < n:
                c = changes[i]
                if c.__class__ is not RawChange or c.table is not table or c.op != op or c.before is not None or (
                        tx_on and c.transaction_id is not None):
                    break
                i += 1
            if i - start >= _MIN_RUN:
                if done < start:
                    self._build_each(changes[done:start], out, now_ns)
                self._build_run(changes[start:i], out, now_ns)
                done = i
        if done < n:
            self._build_each(changes[done:] if done else changes, out, now_ns)

    def _build_run(self, run: list[RawChange], out: list, now_ns: int) -> None:
        """Records of changes of one table with one op (``r`` or ``c``), no ``before`` and no transaction block."""
        te = self.table_events(run[0].table)
        try:
            values, keys = te.rows([ch.after for ch in run])
        except Exception:  # noqa: BLE001  # one of them fails: one by one, with the failure handling mode
            self._build_each(run, out, now_ns)
            return
        if keys is None:
            keys = repeat(None)
        ts_ms, ts_us, op = now_ns // 1_000_000, now_ns // 1_000, run[0].op
        topic, key_schema, envelope, partition = te.topic, te.key_schema, te.envelope, self.partition
        out += [
            new_record(topic, key, {"before": None, "after": after, "source": ch.source, "transaction": None, "op": op,
                                    "ts_ms": ts_ms, "ts_us": ts_us, "ts_ns": now_ns},
                       key_schema if key is not None else None, envelope, ch.offset, {}, partition)
            for ch, after, key in zip(run, values, keys)
        ]

    def _build_each(self, changes: list, out: list, now_ns: int) -> None:
        """Build changes one by one (appending to ``out``)."""
        ts_ms, ts_us = now_ns // 1_000_000, now_ns // 1_000
        append = out.append
        partition = self.partition
        skipped, tx = self.skipped, self.transactions
        skip_unchanged, tombstones = self.skip_unchanged, self.tombstones
        last_table = None
        te: TableEvents | None = None
        # The current table's parts, as locals (set on each change of table).
        topic = key_schema_of_table = envelope = row = row_toast = row_pair = keyf = old_keyf = None
        for ch in changes:
            cls = ch.__class__
            if cls is not RawChange:
                if cls is Checkpoint:
                    self._checkpoint(ch, append)
                elif cls is TransactionBegin:
                    if tx is not None:
                        tx.begin(ch.transaction_id, ch.ts_ms, ch.event_id, out)
                else:
                    append(ch)
                continue
            table, op, raw_before, raw_after, source, offset, transaction_id, transaction_event_id = ch
            if op in skipped:
                append(Checkpoint(offset))
                continue
            if table is not last_table:
                te = self.table_events(table)
                last_table = table
                topic, key_schema_of_table, envelope = te.topic, te.key_schema, te.envelope
                row, row_toast, row_pair, keyf, old_keyf = te.row, te.row_toast, te.row_pair, te.key, te.old_key
            assert te is not None
            try:
                if op == "u":
                    if raw_before is not None and raw_after is not None:
                        before, after = row_pair(raw_before, raw_after)
                    else:
                        before = None if raw_before is None else row_toast(raw_before)
                        after = None if raw_after is None else row_toast(raw_after)
                else:
                    before = None if raw_before is None else row(raw_before)
                    after = None if raw_after is None else row(raw_after)
                keyed_row = raw_after if raw_after is not None else raw_before
                key = keyf(keyed_row) if keyf is not None and keyed_row is not None else None
                old_key = key
                if op == "u" and keyf is not None and raw_before is not None and raw_after is not None:
                    # The old key is known only if the old row carries every key column (with REPLICA
                    # IDENTITY INDEX on another index it carries that index's columns only).
                    old_key = old_keyf(raw_before, raw_after, key)
            except Exception as e:
                self._failed(ch, e)
                append(Checkpoint(offset))
                continue
            if skip_unchanged and op == "u" and before == after:
                append(Checkpoint(offset))
                continue
            block = None
            if tx is not None and transaction_id is not None:
                block = tx.event(transaction_id, data_collection(table.id, self.catalog_in_data_collection),
                                 source.get("ts_ms"), offset, out, transaction_event_id)
            if old_key is not key and old_key != key:
                # A primary-key change: a delete of the old key, its tombstone, and a create of the new.
                del_value = {"before": before, "after": None, "source": source, "transaction": block, "op": "d",
                             "ts_ms": ts_ms, "ts_us": ts_us, "ts_ns": now_ns}
                headers = {"__debezium.newkey": key}
                schemas = {"__debezium.newkey": key_schema_of_table}  # the key schema, as Debezium's emitter
                append(ChangeRecord(topic, old_key, del_value, key_schema_of_table, envelope, None, headers, partition,
                                    schemas))
                if tombstones:  # a tombstone carries its delete's headers, as in Debezium
                    append(ChangeRecord(topic, old_key, None, key_schema_of_table, None, None, dict(headers), partition,
                                        dict(schemas)))
                if block is not None:  # the create is an event of its own, as in Debezium's TransactionMonitor
                    block = tx.second_event(block, data_collection(table.id, self.catalog_in_data_collection), offset)
                value = {"before": None, "after": after, "source": source, "transaction": block, "op": "c",
                         "ts_ms": ts_ms, "ts_us": ts_us, "ts_ns": now_ns}
                append(ChangeRecord(topic, key, value, key_schema_of_table, envelope, offset,
                                    {"__debezium.oldkey": old_key}, partition,
                                    {"__debezium.oldkey": key_schema_of_table}))
                continue
            value = {"before": before, "after": after, "source": source, "transaction": block, "op": op,
                     "ts_ms": ts_ms, "ts_us": ts_us, "ts_ns": now_ns}
            key_schema = key_schema_of_table if key is not None else None  # a truncate has no key at all
            if op == "d" and tombstones:
                append(new_record(topic, key, value, key_schema, envelope, None, {}, partition))
                append(new_record(topic, key, None, key_schema, None, offset, {}, partition))
            else:
                append(new_record(topic, key, value, key_schema, envelope, offset, {}, partition))
