"""Per table version: its topic, Key/Value/Envelope schemas and compiled row and key functions."""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from typing import Any

from cdc_core.columns import ColumnMappers
from cdc_core.config import Config
from cdc_core.config import common
from cdc_core.converters import CustomConverters
from cdc_core.errors import ConfigError, ConnectorError
from cdc_core.filters import ColumnFilter
from cdc_core.naming import field_adjuster, schema_adjuster
from cdc_core.relational import Column, Table, TableId
from cdc_core.rows import (FailureHandler, compile_batch_function, compile_old_key_function, compile_pair_function,
                           compile_row_function)
from cdc_core.schema import INT64, OPTIONAL_INT64, STRING, Schema, struct
from cdc_core.topics import topic_naming_strategy

log = logging.getLogger("cdc.events")

#: The ``transaction`` block of every envelope (null unless provide.transaction.metadata is on).
TRANSACTION_BLOCK = struct(
    "event.block", [("id", STRING), ("total_order", INT64), ("data_collection_order", INT64)], optional=True, version=1
)


#: Debezium 2.7.4's ``Envelope.SCHEMA_VERSION``.
ENVELOPE_VERSION = 2


def envelope_schema(name: str, value: Schema, source: Schema) -> Schema:
    """The Envelope struct as Debezium 2.7 builds it (``TableSchemaBuilder`` then ``SchemaFactory``).

    ``TableSchemaBuilder`` adds before/after, source and transaction; ``Envelope.Builder.build()``
    then appends op, ts_ms, ts_us, ts_ns. JsonConverter writes payload fields in this order, so
    the event builder's value dicts follow it too.
    """
    return struct(
        name,
        [
            ("before", value),
            ("after", value),
            ("source", source),
            ("transaction", TRANSACTION_BLOCK),
            ("op", STRING),
            ("ts_ms", OPTIONAL_INT64),
            ("ts_us", OPTIONAL_INT64),
            ("ts_ns", OPTIONAL_INT64),
        ],
        version=ENVELOPE_VERSION,
    )



def key_names(key_columns: list[tuple[re.Pattern[str], list[str]]], table: Table) -> list[str]:
    """The key columns of ``table``: its ``message.key.columns`` entry (parsed) if one matches, else its primary key."""
    for pattern, names in key_columns:
        if any(pattern.fullmatch(name) for name in table.id.names):
            # As CustomKeyMapper: each name is a case-insensitive regex over the column names, the matches in
            # the order listed; none matching leaves the primary key.
            out: list[str] = []
            for n in names:
                rx = re.compile(n, re.IGNORECASE)
                out += [c.name for c in table.columns if rx.fullmatch(c.name) and c.name not in out]
            return out or table.primary_key
    return table.primary_key


def parse_message_key_columns(value: str | None) -> list[tuple[re.Pattern[str], list[str]]]:
    """``message.key.columns``: ``<table regex>:<col>,<col>;...`` into (anchored regex, columns) pairs."""
    out = []
    for entry in (value or "").split(";"):
        if not entry.strip():
            continue
        table, _, columns = entry.rpartition(":")
        names = [c.strip() for c in columns.split(",") if c.strip()]
        if not table.strip() or not names:
            raise ValueError(f"{entry.strip()!r} is not <table regex>:<column>[,<column>...]")
        for n in names:  # column names are regexes too (CustomKeyMapper)
            try:
                re.compile(n)
            except re.error as e:
                raise ValueError(f"{n!r} is not a valid column regex: {e}") from None
        # Case-insensitive, as Debezium's CustomKeyMapper (Predicates.includes compiles with CASE_INSENSITIVE;
        # Db2ConnectorIT.shouldRewriteIdentityKey keys DB2INST1.TABLEA by "(.*).tablea:id,cola").
        out.append((re.compile(table.strip(), re.IGNORECASE), names))
    return out


class EventSettings:
    """Everything, decided once per connector run, that shapes a table's events."""

    def __init__(self, config: Config, source_schema: Schema, plugins: Any = None):
        self.config = config
        self.source_schema = source_schema
        problems: list[str] = []
        try:
            self.topics = topic_naming_strategy(config, plugins)
        except ConfigError as e:
            problems += e.problems
        self.columns = ColumnFilter(config)
        try:
            self.converters = CustomConverters(config, plugins)
        except ConfigError as e:
            problems += e.problems
        try:
            self.mappers = ColumnMappers(config)
        except ConfigError as e:
            problems += e.problems
        try:
            self.key_columns = parse_message_key_columns(config.get(common.MESSAGE_KEY_COLUMNS))
        except (ValueError, re.error) as e:
            problems.append(f"{common.MESSAGE_KEY_COLUMNS.name}: {e}")
        if problems:
            raise ConfigError(problems)
        self.field_name = field_adjuster(config.get(common.FIELD_NAME_ADJUSTMENT))
        self.schema_name = schema_adjuster(config.get(common.SCHEMA_NAME_ADJUSTMENT))
        self.placeholder = config.get(common.UNAVAILABLE_PLACEHOLDER)
        self.converting_failure = config.get(common.CONVERTING_FAILURE_HANDLING)

    def on_converting_failure(self, table: TableId) -> FailureHandler:
        """``event.converting.failure.handling.mode`` for a value column of ``table`` whose converter failed.

        Debezium's TableSchemaBuilder writes null for the field and logs (warn: a warning, skip: at
        debug level), or stops (fail). Keys are never tolerant: a key converter's failure stops.
        """
        mode = self.converting_failure

        def handle(column: Column, raw: Any, error: Exception) -> None:
            if mode == "fail":
                raise ConnectorError(
                    f"cannot convert the value of {table}.{column.name} of type {column.type_name}: {error} "
                    "(event.converting.failure.handling.mode=fail)") from error
            (log.warning if mode == "warn" else log.debug)(
                "failed to convert the value of %s.%s of type %s, written as null: %s",
                table, column.name, column.type_name, error)

        return handle

    def column(self, table: TableId, column: Column, key: bool = False) -> Column:
        """A column as events carry it: converted, masked (value fields only, as Debezium's key generator), renamed."""
        out = self.converters.apply(table, column) if self.converters else column
        if out.schema is None:
            return out  # a type the connector cannot map, and no converter claimed it: left out
        out = self.mappers.apply(table, out) if self.mappers and not key else out
        name = self.field_name(out.name)
        return out if name == out.name else replace(out, name=name)

    def key_names(self, table: Table) -> list[str]:
        """The key columns: ``message.key.columns`` for the table if set, else its primary key."""
        return key_names(self.key_columns, table)


class TableEvents:
    """Everything needed to build one table version's records: topic, schemas and row functions."""

    __slots__ = ("table", "topic", "key_schema", "value_schema", "envelope", "row", "row_toast", "key", "key_positions",
                 "rows", "old_key", "row_pair")

    def __init__(self, table: Table, settings: EventSettings):
        tid = table.id
        columns = [(i, settings.column(tid, c)) for i, c in enumerate(table.columns)]
        # Columns without a schema (types the connector cannot map) are left out of keys and
        # values, as Debezium's TableSchemaBuilder skips columns its converters give no schema.
        included = [(i, c) for i, c in columns
                    if c.schema is not None and settings.columns.includes(tid, table.columns[i].name)]
        prefix = settings.schema_name(settings.topics.record_schema_prefix(tid))
        self.table = table
        self.topic = settings.topics.data_topic(tid)
        self.value_schema = struct(f"{prefix}.Value", [(c.name, c.schema) for _, c in included], optional=True)
        self.envelope = envelope_schema(f"{prefix}.Envelope", self.value_schema, settings.source_schema)
        # Debezium always keys by the primary key (or message.key.columns), even where the column
        # filters drop its columns from the value; so the key is converted from the raw row.
        key_names = settings.key_names(table)
        if key_names:
            positions = {c.name: i for i, c in enumerate(table.columns)}
            key_columns = [(positions[n], settings.column(tid, table.columns[positions[n]], key=True))
                           for n in key_names]
            key_columns = [(i, c) for i, c in key_columns if c.schema is not None]
        if key_names and key_columns:
            # Key fields keep their column's nullability (TableSchemaBuilder.addField): a primary key's
            # columns are NOT NULL, a unique index or message.key.columns may name nullable ones.
            self.key_schema = struct(f"{prefix}.Key", [(c.name, c.schema) for _, c in key_columns])
            self.key = compile_row_function(key_columns, with_unavailable=False)
            self.key_positions = tuple(i for i, _ in key_columns)
            #: ``old_key(before, after, key(after))``: an update's old key (the new one where unknown or unchanged).
            self.old_key = compile_old_key_function(self.key, self.key_positions)
        else:
            key_columns = []
            self.key_schema = None
            self.key = None
            self.key_positions = ()
            self.old_key = None
        on_failure = settings.on_converting_failure(tid)
        self.row = compile_row_function(included, with_unavailable=False, on_failure=on_failure)
        #: ``rows(raw_rows) -> (values, keys)``: ``row`` and ``key`` for a run of inserts or reads at once.
        self.rows = compile_batch_function(included, key_columns)
        self.row_toast = compile_row_function(included, with_unavailable=True, placeholder=settings.placeholder,
                                              on_failure=on_failure)
        #: ``row_pair(before, after) -> (row_toast(before), row_toast(after))``, unchanged values converted once.
        self.row_pair = compile_pair_function(included, self.row_toast, placeholder=settings.placeholder)
