"""Debezium's binlog custom converters: ``TinyIntOneToBooleanConverter`` and ``JdbcSinkDataTypesConverter``.

Both receive the connector's intermediate values (``cdc_mysql.types``): ints for integer and
BOOLEAN columns, big-endian bytes for BIT, floats for FLOAT/DOUBLE/REAL, the unscaled int (or a
Decimal) for DECIMAL, str for character columns.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any, ClassVar

from cdc_core import semantic as sem
from cdc_core.relational import Column, TableId
from cdc_core.schema import Schema
from cdc_core.spi.converter import Conversion

_TINYINT_FAMILY = frozenset({"TINYINT", "TINYINT UNSIGNED"})


def selector(text: str | None) -> Callable[[str], bool] | None:
    """Debezium's ``Predicates.includes``: comma-separated regexes, each matching the whole name, case-insensitively."""
    patterns = [re.compile(p.strip(), re.IGNORECASE) for p in (text or "").strip().split(",") if p.strip()]
    if not patterns:
        return None
    return lambda name: any(p.fullmatch(name) for p in patterns)


def _column_id(column: Column, table: TableId) -> str:
    """``x.dataCollection() + "." + x.name()``: ``db.table.column``."""
    return f"{table.identifier}.{column.name}"


def _truthy(value: Any) -> bool:
    """A value as Debezium's converters read a boolean: numbers above 0, bit strings with a set bit, "true"."""
    if isinstance(value, (bytes, bytearray)):
        return int.from_bytes(value, "big") > 0
    if isinstance(value, str):
        try:
            return int(value) > 0
        except ValueError:
            return value.strip().lower() == "true"
    return int(value) > 0


def _positive(value: Any) -> bool:
    return int(value) > 0


class TinyIntOneToBooleanConverter:
    """TINYINT(1) columns (or those ``selector`` lists) as booleans: a value above 0 is true.

    ``selector``: comma-separated regexes on ``db.table.column`` (default: every TINYINT(1) column);
    ``length.checker`` (default true): require the display length 1 (set false where ``SHOW CREATE
    TABLE`` omits it, as MySQL 8 does, and name the columns in ``selector``).
    """

    name: ClassVar[str] = "TinyIntOneToBoolean"
    class_names: ClassVar[tuple[str, ...]] = (
        "io.debezium.connector.binlog.converters.TinyIntOneToBooleanConverter",
        "io.debezium.connector.mysql.converters.TinyIntOneToBooleanConverter",
    )

    def configure(self, props: dict[str, str]) -> None:
        """Read ``selector`` and ``length.checker``."""
        self.selector = selector(props.get("selector"))
        self.length_checker = (props.get("length.checker") or "true").strip().lower() != "false"

    def converter_for(self, column: Column, table: TableId) -> Conversion | None:
        """A boolean conversion for a selected TINYINT(1) column, else None."""
        if column.type_name.upper() not in _TINYINT_FAMILY:
            return None
        if self.length_checker and column.length != 1:
            return None
        if self.selector is not None and not self.selector(_column_id(column, table)):
            return None
        return Conversion(Schema("boolean", optional=column.optional), _positive)


class JdbcSinkDataTypesConverter:
    """Types kept the same in snapshots and streaming for the JDBC sink: booleans as INT16, REAL as FLOAT64, strings with their charset.

    ``selector.boolean``: columns written as int16 1/0; ``selector.real``: columns written as
    float64 (float32 with ``treat.real.as.double=false``); ``selector.string``: string columns
    with the parameter ``__debezium.source.column.character_set``. Each a list of regexes on
    ``db.table.column``; a column no selector names is left alone.
    """

    name: ClassVar[str] = "JdbcSinkDataTypes"
    class_names: ClassVar[tuple[str, ...]] = (
        "io.debezium.connector.binlog.converters.JdbcSinkDataTypesConverter",
        # Deprecated in 2.7 (a subclass of the binlog one), still accepted.
        "io.debezium.connector.mysql.converters.JdbcSinkDataTypesConverter",
    )

    def configure(self, props: dict[str, str]) -> None:
        """Read ``selector.boolean``, ``selector.real``, ``selector.string`` and ``treat.real.as.double``."""
        self.boolean = selector(props.get("selector.boolean"))
        self.real = selector(props.get("selector.real"))
        self.string = selector(props.get("selector.string"))
        flag = (props.get("treat.real.as.double") or "").strip()
        self.real_as_double = flag.lower() == "true" if flag else True

    def converter_for(self, column: Column, table: TableId) -> Conversion | None:
        """The conversion of the first selector that names the column (boolean, then real, then string)."""
        name = _column_id(column, table)
        if self.boolean is not None and self.boolean(name):
            return Conversion(Schema("int16", optional=column.optional), lambda v: 1 if _truthy(v) else 0)
        if self.real is not None and self.real(name):
            number = _number(column)
            if self.real_as_double:
                return Conversion(Schema("float64", optional=column.optional), lambda v: sem.json_float(number(v)))
            return Conversion(Schema("float32", optional=column.optional), lambda v: sem.json_float32(number(v)))
        if self.string is not None and self.string(name):
            schema = Schema("string", optional=column.optional,
                            parameters={"__debezium.source.column.character_set": column.extra.get("charset")})
            return Conversion(schema, _text)
        return None


def _number(column: Column) -> Callable[[Any], float]:
    """A column's intermediate value as a float (DECIMAL's unscaled int at its scale)."""
    definition = column.extra.get("definition")
    scale = column.scale or 0
    if definition is not None and getattr(definition, "type_name", None) == "DECIMAL" and scale:
        ten = 10 ** scale
        return lambda v: v / ten if isinstance(v, int) else float(v)

    def to_float(v: Any) -> float:
        if isinstance(v, (bytes, bytearray)):
            return float(int.from_bytes(v, "big"))
        if isinstance(v, Decimal):
            return float(v)
        return float(v)

    return to_float


def _text(value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    return value if isinstance(value, str) else str(value)
