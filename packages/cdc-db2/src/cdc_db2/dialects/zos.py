"""Db2 for z/OS: ``SYSIBM.SYSTABLES``/``SYSIBM.SYSCOLUMNS``, reads ``FOR READ ONLY WITH UR`` (Debezium's ZOsPlatform).

``SYSIBM.SYSCOLUMNS`` describes a column in its own terms, turned here into ``SYSCAT.COLUMNS``'s:
``COLTYPE`` codes (``CHAR``, ``VARG``, ``LONGVAR``, ``TIMESTMP``, ``VARBIN``, ``FLOAT`` of length 4
or 8...) become LUW type names; ``COLNO`` counts from 1; a LOB's ``LENGTH`` is its descriptor's
(4), its maximum length is ``LENGTH2``; ``DECFLOAT``'s ``LENGTH`` is bytes (8, 16: 16 and 34 digits) as in ``SYSCAT.COLUMNS``;
``TIMESTMP``'s ``SCALE`` is its fractional digits (``LENGTH`` 10 with ``SCALE`` 0: a table from
before Db2 10, 6 digits); ``FOREIGNKEY = 'B'`` marks FOR BIT DATA (code page 0); the default is a
``DEFAULT`` code and a ``DEFAULTVALUE`` text instead of one expression.
"""

from __future__ import annotations

from typing import Any

from cdc_db2.dialects.base import Dialect, text

#: ``COLTYPE`` codes whose LUW type name differs (FLOAT, LENGTH 4: REAL, is decided by its length).
TYPE_NAMES = {"CHAR": "CHARACTER", "VARG": "VARGRAPHIC", "LONGVAR": "LONG VARCHAR", "LONGVARG": "LONG VARGRAPHIC",
              "TIMESTMP": "TIMESTAMP", "TIMESTZ": "TIMESTAMP WITH TIME ZONE", "VARBIN": "VARBINARY", "FLOAT": "DOUBLE"}
#: Character and graphic types: their code page is the column's CCSID (0 for FOR BIT DATA).
CHARACTER_TYPES = frozenset({"CHARACTER", "VARCHAR", "LONG VARCHAR", "CLOB", "GRAPHIC", "VARGRAPHIC",
                             "LONG VARGRAPHIC", "DBCLOB"})
#: ``DEFAULT`` codes without a DEFAULTVALUE: ``B``, the type's own default (WITH DEFAULT); ``U``/``S``, the
#: authorization ID (USER, CURRENT SQLID). ``N`` (none), ``Y`` (NULL) and generated columns (``A``, ``D``...)
#: have no default expression.
_REGISTERS = {"U": "USER", "S": "CURRENT SQLID"}
_TYPE_DEFAULTS = {"DATE": "CURRENT DATE", "TIME": "CURRENT TIME", "TIMESTAMP": "CURRENT TIMESTAMP",
                  "CHARACTER": "''", "VARCHAR": "''", "GRAPHIC": "''", "VARGRAPHIC": "''", "SMALLINT": "0",
                  "INTEGER": "0", "BIGINT": "0", "DECIMAL": "0", "REAL": "0", "DOUBLE": "0", "DECFLOAT": "0"}


def timestamp_length(digits: int) -> int:
    """``SYSCAT.COLUMNS.LENGTH`` of a ``TIMESTAMP(digits)``, as the LUW dialect reads it."""
    return 10 if digits == 0 else 11 + digits


class ZOs(Dialect):
    """``SYSIBM`` catalog tables; control-table reads at uncommitted read, as ZOsPlatform's."""

    platform = "ZOS"
    tables, table_schema, table_name, table_type = "SYSIBM.SYSTABLES", "CREATOR", "NAME", "TYPE"
    columns, column_schema, column_table, column_name = "SYSIBM.SYSCOLUMNS", "TBCREATOR", "TBNAME", "NAME"
    column_no, column_type = "COLNO", "COLTYPE"
    column_extra = ("LENGTH2", '"DEFAULT"', "DEFAULTVALUE", "FOREIGNKEY", "CCSID")
    first_column_no = 1
    read_only = " FOR READ ONLY WITH UR"

    def describe(self, ctype: str, length: int, scale: int, nullable: bool,
                 extra: list[Any]) -> tuple[str, int, int, int, str | None]:
        """``SYSCAT.COLUMNS``'s description of a ``SYSIBM.SYSCOLUMNS`` row."""
        length2, code, value, subtype, ccsid = extra
        name = "REAL" if ctype == "FLOAT" and length == 4 else TYPE_NAMES.get(ctype, ctype)
        if name in ("BLOB", "CLOB", "DBCLOB"):
            length = int(length2 or length)
        elif name == "TIMESTAMP":
            scale = 6 if length == 10 and scale == 0 else scale
            length = timestamp_length(scale)
        if name in CHARACTER_TYPES:
            codepage = 0 if text(subtype) == "B" or ccsid == 65535 else int(ccsid or 1208)
        else:
            codepage = 0
        return name, length, scale, codepage, self.default(name, text(code), value)

    @staticmethod
    def default(type_name: str, code: str, value: Any) -> str | None:
        """The DEFAULT expression of a ``DEFAULT`` code and ``DEFAULTVALUE`` (None: no default)."""
        if value is not None and str(value).strip():
            return str(value).strip()
        if code == "B":
            return _TYPE_DEFAULTS.get(type_name)
        return _REGISTERS.get(code)
