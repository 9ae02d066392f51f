"""Debezium's binlog custom converters: ``TinyIntOneToBooleanConverter`` (BOOLEAN columns read as TINYINT(1))."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from cdc_core.relational import Column, TableId
from cdc_core.schema import Schema
from cdc_core.spi.converter import Conversion

_TINYINT_FAMILY = frozenset({"TINYINT", "TINYINT UNSIGNED"})


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
        selector = (props.get("selector") or "").strip()
        self.selector = [re.compile(p.strip()) for p in selector.split(",") if p.strip()]
        self.length_checker = (props.get("length.checker") or "true").strip().lower() != "false"

    def converter_for(self, column: Column, table: TableId) -> Conversion | None:
        """A boolean conversion for a selected TINYINT(1) column, else None."""
        if column.type_name.upper() not in _TINYINT_FAMILY:
            return None
        if self.length_checker and column.length != 1:
            return None
        if self.selector and not any(p.fullmatch(f"{table.identifier}.{column.name}") for p in self.selector):
            return None
        return Conversion(Schema("boolean", optional=column.optional), _positive)
