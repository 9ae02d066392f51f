"""``Dialect``: what the connector reads from a Db2 platform's catalog, named by class attributes a platform sets.

As Debezium 2.7.4's ``Db2PlatformAdapter`` (``LuwPlatform``/``ZOsPlatform``), one subclass per
platform; unlike it the column catalog is read here too (Debezium asks the JDBC driver's
``DatabaseMetaData``, which reads ``SYSCAT.COLUMNS`` or ``SYSIBM.SYSCOLUMNS`` for it).
"""

from __future__ import annotations

from typing import Any, ClassVar

from cdc_db2.types import ColumnInfo


def text(value: Any) -> str:
    """A catalog string without the blanks Db2 pads CHAR columns with."""
    return "" if value is None else str(value).rstrip()


class Dialect:
    """One platform's catalog objects and the clauses its control-table reads take."""

    #: ``db2.platform`` value, as Debezium spells it.
    platform: ClassVar[str]
    #: The table catalog; its schema, name and type columns; the type of a base table.
    tables: ClassVar[str]
    table_schema: ClassVar[str]
    table_name: ClassVar[str]
    table_type: ClassVar[str]
    base_table: ClassVar[str] = "T"
    #: The column catalog, its schema, table, name, number, type, length, scale, nullability and key-sequence
    #: columns (``KEYSEQ``: the position in the primary key, 0 or NULL outside it).
    columns: ClassVar[str]
    column_schema: ClassVar[str]
    column_table: ClassVar[str]
    column_name: ClassVar[str]
    column_no: ClassVar[str]
    column_type: ClassVar[str]
    column_length: ClassVar[str] = "LENGTH"
    column_scale: ClassVar[str] = "SCALE"
    column_nulls: ClassVar[str] = "NULLS"
    column_keyseq: ClassVar[str] = "KEYSEQ"
    #: The platform's further column-catalog columns ``describe`` reads (code page, default...).
    column_extra: ClassVar[tuple[str, ...]] = ()
    #: The number of the first column in ``column_no`` (LUW counts from 0, z/OS from 1).
    first_column_no: ClassVar[int]
    #: Appended to the reads of the ASN control tables (z/OS: ``FOR READ ONLY WITH UR``, as ZOsPlatform).
    read_only: ClassVar[str] = ""

    def columns_query(self, schemas: list[str]) -> str:
        """Every column of the base tables of ``schemas`` (``?`` markers), by schema, table and column number."""
        c = ", ".join(f"c.{n}" for n in (self.column_schema, self.column_table, self.column_name, self.column_no,
                                          self.column_type, self.column_length, self.column_scale, self.column_nulls,
                                          self.column_keyseq, *self.column_extra))
        markers = ", ".join("?" for _ in schemas)
        return (f"SELECT {c} FROM {self.columns} c JOIN {self.tables} t ON t.{self.table_schema} = c.{self.column_schema} "
                f"AND t.{self.table_name} = c.{self.column_table} WHERE t.{self.table_type} = '{self.base_table}' "
                f"AND c.{self.column_schema} IN ({markers}) "
                f"ORDER BY c.{self.column_schema}, c.{self.column_table}, c.{self.column_no}{self.read_only}")

    def schemas_query(self) -> str:
        """Every schema holding a base table."""
        return (f"SELECT DISTINCT {self.table_schema} FROM {self.tables} WHERE {self.table_type} = '{self.base_table}'"
                f"{self.read_only}")

    def column_counts_query(self, schemas: list[str]) -> str:
        """Schema, table and column count of every table of ``schemas`` (``?`` markers)."""
        markers = ", ".join("?" for _ in schemas)
        return (f"SELECT {self.column_schema}, {self.column_table}, COUNT(*) FROM {self.columns} WHERE "
                f"{self.column_schema} IN ({markers}) GROUP BY {self.column_schema}, {self.column_table}{self.read_only}")

    def register_query(self, control: str) -> str:
        """The tables in capture mode: ``IBMSNAP_REGISTER`` rows of source tables (the global row has no owner), with
        the commit sequence of each one's newest CD rows (``CD_NEW_SYNCHPOINT``)."""
        return (f"SELECT r.SOURCE_OWNER, r.SOURCE_TABLE, r.CD_OWNER, r.CD_TABLE, r.STATE, r.CD_NEW_SYNCHPOINT "
                f"FROM {control}.IBMSNAP_REGISTER r "
                f"WHERE r.SOURCE_OWNER <> '' ORDER BY r.SOURCE_OWNER, r.SOURCE_TABLE{self.read_only}")

    def max_lsn_query(self, control: str) -> str:
        """The highest synchpoint the capture program has reached (everything below it is in the CD tables)."""
        return (f"SELECT MAX(t.SYNCHPOINT) FROM (SELECT CD_NEW_SYNCHPOINT AS SYNCHPOINT FROM {control}.IBMSNAP_REGISTER "
                f"UNION ALL SELECT SYNCHPOINT AS SYNCHPOINT FROM {control}.IBMSNAP_REGISTER) t{self.read_only}")

    def column_info(self, row: tuple[Any, ...]) -> tuple[str, str, ColumnInfo, int]:
        """Schema, table, the column as the connector describes it, and its KEYSEQ, from a ``columns_query`` row."""
        schema, table, name, colno, ctype, length, scale, nulls, keyseq, *extra = row
        type_name, length, scale, codepage, default = self.describe(text(ctype).upper(), int(length or 0),
                                                                    int(scale or 0), text(nulls) == "Y", extra)
        info = ColumnInfo(text(name), int(colno) - self.first_column_no + 1, type_name, length, scale,
                          text(nulls) == "Y", codepage, default)
        return text(schema), text(table), info, int(keyseq or 0)

    def describe(self, ctype: str, length: int, scale: int, nullable: bool,
                 extra: list[Any]) -> tuple[str, int, int, int, str | None]:
        """Type name, length, scale, code page (0: FOR BIT DATA) and DEFAULT text in ``SYSCAT.COLUMNS`` terms."""
        raise NotImplementedError
