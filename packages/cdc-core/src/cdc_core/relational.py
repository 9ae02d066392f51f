"""The relational model a connector describes its tables with: table ids, columns and tables."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from cdc_core.schema import Schema


class TableId(NamedTuple):
    """A table's identity: ``catalog`` (database), ``schema`` and ``table``; unused parts are None."""

    catalog: str | None
    schema: str | None
    table: str

    @property
    def identifier(self) -> str:
        """The dotted name filters match against: ``schema.table`` (or ``catalog.table`` if no schema)."""
        parent = self.schema if self.schema is not None else self.catalog
        return f"{parent}.{self.table}" if parent is not None else self.table

    @property
    def names(self) -> tuple[str, ...]:
        """The names column mappers and ``message.key.columns`` match: ``identifier``, and ``catalog.schema.table``
        where a table has both (SQL Server, Db2: Debezium's ColumnMappers and Key.CustomKeyMapper try the
        TableId's own ``testDB1.dbo.tablea`` and then its tableIdMapper's ``dbo.tablea``)."""
        if self.catalog is not None and self.schema is not None:
            return (self.identifier, f"{self.catalog}.{self.schema}.{self.table}")
        return (self.identifier,)

    def __str__(self) -> str:
        return self.identifier


#: A column value converter: from the connector's raw value (never None) to the JSON-ready value.
ValueConverter = Callable[[Any], Any]


@dataclass(slots=True)
class Column:
    """One column: its native definition, and the Connect schema and converter its values get.

    ``schema`` is the column's Connect schema as it appears in the ``Value`` struct (its
    ``optional`` flag mirrors the column's nullability). ``convert`` turns a raw value as the
    connector reads it (e.g. PostgreSQL's text form) into the JSON-ready value JsonConverter
    writes; it is never called with None. A column whose type the connector cannot map has
    ``schema=None``: events leave it out (Debezium skips such columns with a warning).
    """

    name: str
    type_name: str
    schema: Schema | None
    convert: ValueConverter
    position: int = 0
    optional: bool = True
    length: int | None = None
    scale: int | None = None
    default_expression: str | None = None
    type_oid: int | None = None
    #: The native type modifier (PostgreSQL's ``atttypmod``: length, precision/scale), if any.
    type_modifier: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True, eq=False)
class Table:
    """A captured table at one schema version: columns in position order and its key columns.

    Tables compare by identity; the core caches its converters per ``Table`` object, so a
    connector builds a new object whenever the table's definition changes.
    """

    id: TableId
    columns: list[Column]
    primary_key: list[str]
    comment: str | None = None

    def column(self, name: str) -> Column:
        """Return the column called ``name`` (KeyError if absent)."""
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"table {self.id} has no column {name!r}")
