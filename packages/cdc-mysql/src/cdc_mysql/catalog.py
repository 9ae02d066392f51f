"""Reading the server's catalog: databases, table definitions, binlog status and settings.

Table definitions come from ``SHOW CREATE TABLE`` run through the same DDL parser as the binlog's
statements (as Debezium does); when that fails, ``information_schema.COLUMNS`` is read instead.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pymysql

from cdc_mysql.ddl import SchemaModel, UnparseableDdl, split_statements
from cdc_mysql.ddl.columns import EPOCH_DEFAULT
from cdc_mysql.model import CHARACTER_TYPES, ColumnDef, TableChange, TableDef, TableId


def quote(name: str) -> str:
    """A backquoted identifier."""
    return "`" + name.replace("`", "``") + "`"


class Catalog:
    """Queries on a regular (non-replication) connection."""

    def __init__(self, conn: pymysql.connections.Connection):
        self.conn = conn

    def query(self, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        """Run a query and return its rows."""
        with self.conn.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())

    def variable(self, name: str) -> str | None:
        """A global server variable's value (None if the server has no such variable)."""
        rows = self.query("SHOW GLOBAL VARIABLES LIKE %s", (name,))
        return str(rows[0][1]) if rows else None

    def databases(self) -> list[str]:
        """Every database, in name order."""
        return sorted(r[0] for r in self.query("SHOW DATABASES"))

    def database_charsets(self) -> dict[str, str]:
        """Each database's default charset."""
        rows = self.query("SELECT SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA")
        return {str(r[0]): str(r[1]) for r in rows}

    def database_locales(self) -> dict[str, tuple[str | None, str | None]]:
        """Each database's default charset and collation."""
        rows = self.query("SELECT SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA")
        return {str(r[0]): (r[1] and str(r[1]), r[2] and str(r[2])) for r in rows}

    def charset_statement(self) -> str:
        """Debezium's ``SET character_set_server=..., collation_server=...`` (variables in name order)."""
        rows = self.query("SHOW VARIABLES WHERE Variable_name IN ('character_set_server', 'collation_server')")
        values = {str(r[0]): "" if r[1] is None else str(r[1]) for r in rows}
        quoted = {k: f"'{v}'" if "," in v or ";" in v else v for k, v in values.items()}
        return "SET " + ", ".join(f"{k}={quoted[k]}" for k in sorted(quoted))

    def tables(self, database: str) -> list[str]:
        """The base tables of a database (no views), in name order."""
        rows = self.query(f"SHOW FULL TABLES FROM {quote(database)} WHERE Table_type = 'BASE TABLE'")
        return sorted(str(r[0]) for r in rows)

    def show_create_table(self, table: TableId) -> str:
        """``SHOW CREATE TABLE`` of a table."""
        return str(self.query(f"SHOW CREATE TABLE {quote(table.database)}.{quote(table.table)}")[0][1])

    def binlog_position(self) -> tuple[str, int, str]:
        """The current binlog file, position and executed GTID set (MySQL's, or MariaDB's gtid_binlog_pos)."""
        rows = self.query("SHOW MASTER STATUS")
        if not rows:
            raise pymysql.err.OperationalError(0, "binary logging is not enabled (SHOW MASTER STATUS is empty)")
        row = rows[0]
        gtids = str(row[4]) if len(row) > 4 and row[4] else ""
        if not gtids:
            gtid_pos = self.variable("gtid_binlog_pos")
            gtids = gtid_pos or ""
        return str(row[0]), int(row[1]), gtids.replace("\n", "")

    def row_estimates(self, tables: list[TableId]) -> dict[str, int]:
        """Each table's estimated row count (``information_schema.TABLES``), by ``db.table``."""
        out = {}
        for t in tables:
            rows = self.query("SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND "
                              "TABLE_NAME = %s", (t.database, t.table))
            out[str(t)] = int(rows[0][0] or 0) if rows else 0
        return out

    def binary_logs(self) -> list[str]:
        """The binlog files the server still has."""
        return [str(r[0]) for r in self.query("SHOW BINARY LOGS")]

    def read_table(self, model: SchemaModel, table: TableId) -> TableChange:
        """Put a table's current definition into ``model`` (SHOW CREATE TABLE, else information_schema)."""
        ddl = self.show_create_table(table)
        try:
            applied = model.apply(ddl, table.database)
            for change in applied.changes:
                if change.id == table:
                    return change
        except UnparseableDdl:
            pass
        definition = self.table_from_information_schema(table, model)
        model.put(definition)
        return TableChange("CREATE", table, definition)

    def table_from_information_schema(self, table: TableId, model: SchemaModel) -> TableDef:
        """A table definition built from ``information_schema.COLUMNS`` and ``STATISTICS``."""
        rows = self.query(
            "SELECT COLUMN_NAME, ORDINAL_POSITION, COLUMN_DEFAULT, IS_NULLABLE, DATA_TYPE, CHARACTER_MAXIMUM_LENGTH, "
            "NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION, CHARACTER_SET_NAME, COLUMN_TYPE, EXTRA, COLUMN_COMMENT "
            "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
            (table.database, table.table),
        )
        if not rows:
            raise UnparseableDdl(f"SHOW CREATE TABLE {table}", f"table {table} is not in information_schema", [table])
        charset_row = self.query(
            "SELECT CCSA.CHARACTER_SET_NAME FROM information_schema.TABLES T JOIN information_schema."
            "COLLATION_CHARACTER_SET_APPLICABILITY CCSA ON CCSA.COLLATION_NAME = T.TABLE_COLLATION "
            "WHERE T.TABLE_SCHEMA = %s AND T.TABLE_NAME = %s", (table.database, table.table))
        charset = str(charset_row[0][0]) if charset_row else model.charset_of(table.database)
        columns = []
        for (name, position, default, nullable, data_type, char_len, num_prec, num_scale, dt_prec, col_charset,
             column_type, extra, comment) in rows:
            column_type = str(column_type).lower()
            type_name = str(data_type).upper()
            length: int | None = None
            scale: int | None = None
            enum_values = None
            if type_name in ("ENUM", "SET"):
                inner = column_type[column_type.index("(") + 1:column_type.rindex(")")]
                enum_values = tuple(v[1:-1].replace("''", "'") for v in _split_quoted(inner))
                length = 1 if type_name == "ENUM" else max(0, 2 * len(enum_values) - 1)  # Debezium's lengths
            elif "(" in column_type:
                args = column_type[column_type.index("(") + 1:column_type.index(")")].split(",")
                length = int(args[0])
                scale = int(args[1]) if len(args) > 1 else None
            elif type_name in ("DATETIME", "TIMESTAMP", "TIME") and dt_prec:
                length = int(dt_prec)
            if type_name == "DECIMAL" and scale is None:
                scale = int(num_scale or 0)
            has_default = default is not None
            default_text = None if default is None else str(default)
            if default_text is not None and default_text.upper() == "NULL":
                default_text, has_default = None, False
            elif default_text is not None and default_text.lower().startswith(("current_timestamp", "now(")):
                default_text = EPOCH_DEFAULT
            elif default_text is not None and default_text[:2].lower() == "b'":
                default_text = default_text[2:-1]
            elif default_text is not None and len(default_text) >= 2 and default_text[0] == "'" and default_text[-1] == "'":
                default_text = default_text[1:-1].replace("''", "'")
            columns.append(ColumnDef(
                name=str(name), type_name=type_name, position=int(position), length=length, scale=scale,
                unsigned="unsigned" in column_type, zerofill="zerofill" in column_type,
                optional=str(nullable).upper() == "YES", auto_increment="auto_increment" in str(extra).lower(),
                generated="generated" in str(extra).lower() or "virtual" in str(extra).lower()
                or "persistent" in str(extra).lower() or "stored" in str(extra).lower(),
                charset=str(col_charset) if col_charset and type_name in CHARACTER_TYPES else None,
                has_default=has_default, default=default_text, enum_values=enum_values,
                comment=str(comment) if comment else None,
            ))
        keys = self.query(
            "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = %s AND "
            "TABLE_NAME = %s AND NON_UNIQUE = 0 ORDER BY INDEX_NAME = 'PRIMARY' DESC, INDEX_NAME, SEQ_IN_INDEX",
            (table.database, table.table))
        by_index: dict[str, list[str]] = {}
        for index, column in keys:
            by_index.setdefault(str(index), []).append(str(column))
        pk = tuple(by_index.pop("PRIMARY", []))
        columns = [replace(c, optional=False) if c.name in pk else c for c in columns]
        return TableDef(table, tuple(columns), pk, charset, None, tuple(tuple(v) for v in by_index.values()))


def _split_quoted(text: str) -> list[str]:
    """Split ``'a','b,c'`` into quoted items."""
    out, current, quoted, i = [], "", False, 0
    while i < len(text):
        ch = text[i]
        if ch == "'":
            if quoted and i + 1 < len(text) and text[i + 1] == "'":
                current += "''"
                i += 2
                continue
            quoted = not quoted
            current += ch
        elif ch == "," and not quoted:
            out.append(current.strip())
            current = ""
        else:
            current += ch
        i += 1
    if current.strip():
        out.append(current.strip())
    return out


__all__ = ["Catalog", "quote", "split_statements"]
