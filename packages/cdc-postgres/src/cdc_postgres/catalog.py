"""Reading table definitions from PostgreSQL's catalog into cdc's relational model."""

from __future__ import annotations

from typing import Any

import psycopg

from cdc_core.filters import TableFilter
from cdc_core.relational import Column, Table, TableId
from cdc_postgres.types import TypeModes, column_for

#: Schemas that are never captured.
SYSTEM_SCHEMAS = frozenset({"pg_catalog", "information_schema", "pg_toast"})

# Generated columns are left out: pgoutput does not send them either.
_TABLES = """
SELECT c.oid, n.nspname, c.relname, c.relreplident
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\\_toast%%' AND n.nspname NOT LIKE 'pg\\_temp\\_%%'
ORDER BY n.nspname, c.relname
"""
_COLUMNS = """
SELECT a.attrelid, a.attname, a.atttypid, a.atttypmod, a.attnotnull, a.attnum,
       t.typname, pg_catalog.pg_get_expr(d.adbin, d.adrelid)
FROM pg_catalog.pg_attribute a
JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attrelid = ANY(%s) AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
ORDER BY a.attrelid, a.attnum
"""
_PRIMARY_KEYS = """
SELECT i.indrelid, a.attname
FROM pg_catalog.pg_index i
JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
WHERE i.indisprimary AND i.indrelid = ANY(%s)
ORDER BY i.indrelid, array_position(i.indkey::int2[], a.attnum)
"""


class Catalog:
    """Reads captured tables' definitions (columns, types, nullability, primary keys) from pg_catalog."""

    def __init__(self, conn: psycopg.Connection, modes: TypeModes, table_filter: TableFilter):
        self.conn = conn
        self.modes = modes
        self.filter = table_filter
        #: Replica identity per table oid: d(efault), f(ull), i(ndex) or n(othing).
        self.replica_identity: dict[int, str] = {}

    def captured_tables(self) -> dict[int, Table]:
        """Every table the filters capture, by oid."""
        with self.conn.cursor() as cur:
            rows = cur.execute(_TABLES).fetchall()
        wanted = {}
        for oid, schema, name, ident in rows:
            tid = TableId(None, schema, name)
            if self.filter.includes(tid):
                wanted[oid] = tid
                self.replica_identity[oid] = ident
        return self._load(wanted)

    def table(self, oid: int) -> Table | None:
        """The current definition of the table with ``oid``, or None if it is gone."""
        with self.conn.cursor() as cur:
            row = cur.execute(
                "SELECT n.nspname, c.relname, c.relreplident FROM pg_catalog.pg_class c "
                "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = %s",
                (oid,),
            ).fetchone()
        if row is None:
            return None
        self.replica_identity[oid] = row[2]
        return self._load({oid: TableId(None, row[0], row[1])}).get(oid)

    def _load(self, ids: dict[int, TableId]) -> dict[int, Table]:
        if not ids:
            return {}
        oids = list(ids)
        columns: dict[int, list[tuple[Any, ...]]] = {oid: [] for oid in oids}
        keys: dict[int, list[str]] = {oid: [] for oid in oids}
        with self.conn.cursor() as cur:
            for row in cur.execute(_COLUMNS, (oids,)):
                columns[row[0]].append(row)
            for oid, name in cur.execute(_PRIMARY_KEYS, (oids,)):
                keys[oid].append(name)
        out = {}
        for oid, tid in ids.items():
            cols: list[Column] = []
            for _, name, type_oid, typmod, notnull, attnum, type_name, default in columns[oid]:
                col = column_for(name, type_oid, typmod, not notnull, self.modes, position=attnum, type_name=type_name)
                col.default_expression = default
                cols.append(col)
            out[oid] = Table(tid, cols, keys[oid])
        return out
