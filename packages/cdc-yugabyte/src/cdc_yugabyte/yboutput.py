"""yboutput's event shape: every column a cell ``{"value": v, "set": true}``, a column the change lacks null.

yboutput speaks pgoutput's protocol (YugabyteDB's ``logicalrep_write_tuple``): a column the change
does not carry (REPLICA IDENTITY CHANGE's unchanged columns) is sent as pgoutput's "unchanged
TOASTed value" byte ``u``, which the pgoutput decoder reads as ``UNAVAILABLE``. A key tuple (``K``)
carries the primary key only. The connector then writes each column the change carries as a cell,
a SQL NULL as ``{"value": null, "set": true}``, and one it does not carry as null, as YugabyteDB's
connector does (its ``PGTableSchemaBuilder``): the cell schema is a struct named after the column
with fields ``value`` (the column's own schema) and ``set`` (boolean), in keys and values alike.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from cdc_core.events import UNAVAILABLE
from cdc_core.relational import Column, Table
from cdc_core.schema import BOOLEAN, Schema, struct
from cdc_postgres.pgoutput import Delete, Insert, Update

#: Marks a column already wrapped (``Column.extra``).
WRAPPED = "yboutput_cell"
#: A SQL NULL the change carries.
NULL_CELL = {"value": None, "set": True}


def cell_schema(name: str, value: Schema, optional: bool) -> Schema:
    """The cell struct of a column: ``value`` (its schema) and ``set``."""
    return struct(name, [("value", value), ("set", BOOLEAN)], optional=optional)


def wrapped_column(column: Column, key: bool) -> Column:
    """``column`` written as a cell; optional unless a primary-key column (those are always present).

    Decision: YugabyteDB's connector makes the cell as optional as the column, so a NOT NULL column
    a CHANGE update leaves out would be a null in a required field; here only key cells are required.
    """
    if column.schema is None or column.extra.get(WRAPPED):
        return column
    inner = column.convert

    def convert(raw: Any) -> Any:
        """The cell of a value the change carries; null for one it does not."""
        return None if raw is UNAVAILABLE else {"value": inner(raw), "set": True}

    schema = cell_schema(column.name, column.schema, optional=not key)
    extra = {**column.extra, WRAPPED: True, "null_value": NULL_CELL, "unavailable": ("struct", schema.name, None)}
    return replace(column, schema=schema, convert=convert, extra=extra)


def wrapped_table(table: Table) -> Table:
    """A table version whose columns are cells (a new object: the core compiles converters per Table)."""
    keys = set(table.primary_key)
    return Table(table.id, [wrapped_column(c, c.name in keys) for c in table.columns], table.primary_key,
                 table.comment)


def key_only(row: tuple[Any, ...] | None, table: Table) -> tuple[Any, ...] | None:
    """A ``K`` tuple with every column outside the primary key marked absent (pgoutput sends them as NULLs)."""
    if row is None:
        return None
    keys = set(table.primary_key)
    return tuple(v if c.name in keys else UNAVAILABLE for c, v in zip(table.columns, row))


def carried_columns(msg: Insert | Update | Delete, table: Table) -> Insert | Update | Delete:
    """The message with a key tuple's non-key columns absent (what yboutput's ``K`` tuple carries)."""
    if msg.__class__ is not Insert and msg.old is not None and msg.old_kind == "K":
        return msg._replace(old=key_only(msg.old, table))
    return msg
