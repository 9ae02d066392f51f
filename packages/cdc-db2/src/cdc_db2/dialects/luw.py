"""Db2 for Linux, UNIX and Windows: ``SYSCAT.TABLES``/``SYSCAT.COLUMNS`` (Debezium's LuwPlatform)."""

from __future__ import annotations

from typing import Any

from cdc_db2.dialects.base import Dialect


class Luw(Dialect):
    """``SYSCAT`` views; the connector's column description is theirs as it is."""

    platform = "LUW"
    tables, table_schema, table_name, table_type = "SYSCAT.TABLES", "TABSCHEMA", "TABNAME", "TYPE"
    columns, column_schema, column_table, column_name = "SYSCAT.COLUMNS", "TABSCHEMA", "TABNAME", "COLNAME"
    column_no, column_type = "COLNO", "TYPENAME"
    column_extra = ("CODEPAGE", '"DEFAULT"')
    first_column_no = 0

    def describe(self, ctype: str, length: int, scale: int, nullable: bool,
                 extra: list[Any]) -> tuple[str, int, int, int, str | None]:
        """``TYPENAME``, ``LENGTH``, ``SCALE``, ``CODEPAGE`` and ``DEFAULT`` as stored."""
        codepage, default = extra
        return ctype, length, scale, int(codepage if codepage is not None else 1208), \
            None if default is None else str(default)
