"""Which schemas, tables and columns are captured: Debezium's anchored include/exclude regex lists."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TypeVar

from cdc_core.config import Config
from cdc_core.config import common
from cdc_core.relational import TableId


T = TypeVar("T")


def snapshot_order(tables: Iterable[T], include: list[re.Pattern[str]] | None, name: Callable[[T], str] = str) -> list[T]:
    """The tables in the order an initial snapshot reads them.

    As 2.7.4's RelationalSnapshotChangeEventSource.addSignalingCollectionAndSort: for each
    ``table.include.list`` regex in the order listed, the tables whose name it matches, sorted by
    name, each table once (where it first matches); without an include list, all tables by name.
    So ``source.snapshot`` is ``first`` in the first table the list names. Tables no regex matches
    (a signal table captured besides the list) come last, by name.
    """
    named = sorted(((name(t), t) for t in tables), key=lambda pair: pair[0])
    if not include:
        return [t for _, t in named]
    out: list[T] = []
    placed: set[str] = set()
    for pattern in include:
        for n, t in named:
            if n not in placed and pattern.fullmatch(n):
                placed.add(n)
                out.append(t)
    out += [t for n, t in named if n not in placed]
    return out


def _matches(patterns: list[re.Pattern[str]], text: str) -> bool:
    return any(p.fullmatch(text) for p in patterns)


class TableFilter:
    """Decides whether a table is captured, from the schema and table include/exclude lists.

    Every regex must match the whole name (Debezium anchors them). Table lists match
    ``schema.table`` (or ``database.table`` where a connector has no schemas). A connector's
    built-in tables are never captured, whatever the lists say (``table.ignore.builtin``): those of
    ``system_schemas`` and of schemas starting with one of ``system_schema_prefixes``, and
    ``system_tables`` (lower-case names, matched case-insensitively in any schema: tables that
    extensions put into the user's schemas, such as PostGIS' ``spatial_ref_sys``).
    """

    def __init__(self, config: Config, system_schemas: frozenset[str] = frozenset(),
                 system_tables: frozenset[str] = frozenset(), system_schema_prefixes: tuple[str, ...] = ()):
        self.schema_include = config.get(common.SCHEMA_INCLUDE) or []
        self.schema_exclude = config.get(common.SCHEMA_EXCLUDE) or []
        self.table_include = config.get(common.TABLE_INCLUDE) or []
        self.table_exclude = config.get(common.TABLE_EXCLUDE) or []
        self.system_schemas = system_schemas
        self.system_tables = system_tables
        self.system_schema_prefixes = system_schema_prefixes

    def includes_schema(self, schema: str | None) -> bool:
        """True if tables of ``schema`` may be captured."""
        if schema is None:
            return True
        if schema in self.system_schemas or (self.system_schema_prefixes and schema.startswith(self.system_schema_prefixes)):
            # Debezium ignores built-in tables regardless of the include and exclude lists.
            return False
        if self.schema_include:
            return _matches(self.schema_include, schema)
        return not _matches(self.schema_exclude, schema)

    def includes(self, table: TableId) -> bool:
        """True if ``table`` is captured."""
        if not self.includes_schema(table.schema):
            return False
        if self.system_tables and table.table.lower() in self.system_tables:
            return False
        name = table.identifier
        if self.table_include:
            return _matches(self.table_include, name)
        return not _matches(self.table_exclude, name)


class ColumnFilter:
    """Decides whether a column appears in events, from ``column.include.list``/``column.exclude.list``.

    The regexes match ``schema.table.column`` (``database.table.column`` where there are no schemas).
    """

    def __init__(self, config: Config):
        self.include = config.get(common.COLUMN_INCLUDE) or []
        self.exclude = config.get(common.COLUMN_EXCLUDE) or []

    def includes(self, table: TableId, column: str) -> bool:
        """True if ``column`` of ``table`` is emitted."""
        name = f"{table.identifier}.{column}"
        if self.include:
            return _matches(self.include, name)
        return not _matches(self.exclude, name)
