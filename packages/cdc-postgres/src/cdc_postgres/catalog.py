"""Reading table definitions from PostgreSQL's catalog into cdc's relational model."""

from __future__ import annotations

import logging
from typing import Any

import psycopg

from cdc_core.filters import TableFilter
from cdc_core.relational import Column, Table, TableId
from cdc_postgres.types import TypeInfo, TypeModes, column_for

#: Schemas that are never captured.
SYSTEM_SCHEMAS = frozenset({"pg_catalog", "information_schema", "pg_toast"})
#: Tables never captured in any schema: extensions' own tables in the user's schemas (Debezium's
#: PostgresConnectorConfig.SystemTablesPredicate lists PostGIS' spatial_ref_sys).
SYSTEM_TABLES = frozenset({"spatial_ref_sys"})
#: Prefixes of schemas never captured (sessions' temporary schemas).
SYSTEM_SCHEMA_PREFIXES = ("pg_temp",)


def table_filter(config: Any) -> TableFilter:
    """The connector's table filter: the include/exclude lists, never the built-in tables."""
    return TableFilter(config, SYSTEM_SCHEMAS, SYSTEM_TABLES, SYSTEM_SCHEMA_PREFIXES)

# Generated columns are left out: pgoutput does not send them either.
_TABLES = """
SELECT c.oid, n.nspname, c.relname, c.relreplident
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\\_toast%%' AND n.nspname NOT LIKE 'pg\\_temp\\_%%'
ORDER BY n.nspname, c.relname
"""
# One row per column, with what the type mapping needs to know of its type: the type under
# all its domains (and the typmod of the nearest domain that has one), an array's element type
# and delimiter, and enum labels (of the type, or of an array's element) in pg_enum's physical order,
# which is what Debezium's unordered array_agg over pg_enum gives: creation order, not the declared
# order of labels added with BEFORE/AFTER.
_COLUMNS = """
WITH RECURSIVE cols AS (
  SELECT a.attrelid, a.attname, a.atttypid, a.atttypmod, a.attnotnull, a.attnum,
         t.typname AS type_name, pg_catalog.pg_get_expr(d.adbin, d.adrelid) AS default_expr
  FROM pg_catalog.pg_attribute a
  JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
  LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
  WHERE a.attrelid = ANY(%s) AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
), chain AS (
  SELECT t.oid AS start, t.oid, t.typtype, t.typbasetype, t.typtypmod, 0 AS depth
  FROM pg_catalog.pg_type t WHERE t.oid IN (SELECT atttypid FROM cols)
  UNION ALL
  SELECT c.start, t.oid, t.typtype, t.typbasetype, t.typtypmod, c.depth + 1
  FROM chain c JOIN pg_catalog.pg_type t ON t.oid = c.typbasetype
  WHERE c.typtype = 'd'
)
SELECT c.attrelid, c.attname, c.atttypid, c.atttypmod, c.attnotnull, c.attnum, c.type_name, c.default_expr,
       t.typname, t.typtype, b.oid, b.typname, b.typtype,
       (SELECT x.typtypmod FROM chain x WHERE x.start = c.atttypid AND x.typtype = 'd' AND x.typtypmod <> -1
        ORDER BY x.depth LIMIT 1),
       e.oid, e.typname, e.typtype, e.typdelim,
       (SELECT array_agg(l.enumlabel::text ORDER BY l.ctid) FROM pg_catalog.pg_enum l
        WHERE l.enumtypid = CASE WHEN b.typtype = 'e' THEN b.oid ELSE e.oid END)
FROM cols c
JOIN pg_catalog.pg_type t ON t.oid = c.atttypid
JOIN chain r ON r.start = c.atttypid AND r.typtype <> 'd'
JOIN pg_catalog.pg_type b ON b.oid = r.oid
LEFT JOIN pg_catalog.pg_type e ON e.oid = b.typelem AND b.typcategory = 'A'
ORDER BY c.attrelid, c.attnum
"""
# The same type facts for bare type OIDs (a Relation message's columns, when the catalog no longer
# has the column: the table was altered again after the change being streamed).
_TYPES = """
WITH RECURSIVE chain AS (
  SELECT t.oid AS start, t.oid, t.typtype, t.typbasetype, t.typtypmod, 0 AS depth
  FROM pg_catalog.pg_type t WHERE t.oid = ANY(%s)
  UNION ALL
  SELECT c.start, t.oid, t.typtype, t.typbasetype, t.typtypmod, c.depth + 1
  FROM chain c JOIN pg_catalog.pg_type t ON t.oid = c.typbasetype
  WHERE c.typtype = 'd'
)
SELECT t.oid, t.typname, t.typtype, b.oid, b.typname, b.typtype,
       (SELECT x.typtypmod FROM chain x WHERE x.start = t.oid AND x.typtype = 'd' AND x.typtypmod <> -1
        ORDER BY x.depth LIMIT 1),
       e.oid, e.typname, e.typtype, e.typdelim,
       (SELECT array_agg(l.enumlabel::text ORDER BY l.ctid) FROM pg_catalog.pg_enum l
        WHERE l.enumtypid = CASE WHEN b.typtype = 'e' THEN b.oid ELSE e.oid END)
FROM pg_catalog.pg_type t
JOIN chain r ON r.start = t.oid AND r.typtype <> 'd'
JOIN pg_catalog.pg_type b ON b.oid = r.oid
LEFT JOIN pg_catalog.pg_type e ON e.oid = b.typelem AND b.typcategory = 'A'
"""
_PRIMARY_KEYS = """
SELECT i.indrelid, a.attname
FROM pg_catalog.pg_index i
JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
WHERE i.indisprimary AND i.indrelid = ANY(%s)
ORDER BY i.indrelid, array_position(i.indkey::int2[], a.attnum)
"""
# Unique indexes of tables, each with its columns in index order (0: an expression). Debezium keys a table
# without a primary key by the first of them as the JDBC driver lists them (getIndexInfo: clustered first,
# then by index name), skipping any with an expression column (PostgresConnection.isTableUniqueIndexIncluded);
# INCLUDE columns are listed too, as the driver expands the whole indkey.
_UNIQUE_INDEXES = """
SELECT i.indrelid, ci.relname, i.indisclustered,
       ARRAY(SELECT a.attname FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
             LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
             ORDER BY k.n)
FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class ci ON ci.oid = i.indexrelid
WHERE i.indisunique AND NOT i.indisprimary AND i.indrelid = ANY(%s)
"""


class Catalog:
    """Reads captured tables' definitions (columns, types, nullability, primary keys) from pg_catalog."""

    def __init__(self, conn: psycopg.Connection, modes: TypeModes, table_filter: TableFilter,
                 log: logging.Logger | logging.LoggerAdapter | None = None):
        self.conn = conn
        self.modes = modes
        self.filter = table_filter
        self.log = log if log is not None else logging.getLogger(__name__)
        #: Replica identity per table oid: d(efault), f(ull), i(ndex) or n(othing).
        self.replica_identity: dict[int, str] = {}
        #: Oids of tables without a primary key, keyed by a unique index.
        self.unique_keyed: set[int] = set()

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

    def type_infos(self, oids: list[int]) -> dict[int, TypeInfo]:
        """What the type mapping needs to know of each type OID (types dropped since are absent)."""
        if not oids:
            return {}
        with self.conn.cursor() as cur:
            return {row[0]: _type_info(row[1:]) for row in cur.execute(_TYPES, (list(oids),))}

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
            unique = cur.execute(_UNIQUE_INDEXES, (oids,)).fetchall()
        for oid, names in _unique_index_keys(unique).items():
            if not keys[oid]:
                keys[oid] = names
                self.unique_keyed.add(oid)
        out = {}
        for oid, tid in ids.items():
            cols: list[Column] = []
            for row in columns[oid]:
                _, name, type_oid, typmod, notnull, attnum, type_name, default = row[:8]
                col = column_for(name, type_oid, typmod, not notnull, self.modes, position=attnum,
                                 type_name=type_name, type_info=_type_info(row[8:]), default_expression=default)
                if col.schema is None:
                    self.log.warning(
                        "column %s.%s has type %s, which has no mapping; it is left out of change events%s",
                        tid, name, type_name,
                        "" if self.modes.include_unknown_datatypes else " (include.unknown.datatypes=true "
                        "would carry its text as bytes)",
                    )
                cols.append(col)
            out[oid] = Table(tid, cols, keys[oid])
        return out


def _unique_index_keys(rows: list[tuple[int, str, bool, list[str | None]]]) -> dict[int, list[str]]:
    """Per table, the columns of the unique index Debezium keys it by when it has no primary key.

    As JdbcConnection.readTableUniqueIndices over pgjdbc's getIndexInfo (ordered by TYPE, where a
    clustered index comes first, then INDEX_NAME): the first index whose columns are all plain
    columns; an index on an expression is skipped.
    """
    out: dict[int, list[str]] = {}
    for oid, _, _, names in sorted(rows, key=lambda r: (r[0], not r[2], r[1])):
        if oid not in out and names and all(n is not None for n in names):
            out[oid] = list(names)
    return out


def _type_info(facts: tuple[Any, ...]) -> TypeInfo:
    """The TypeInfo of the type columns of a ``_COLUMNS`` or ``_TYPES`` row."""
    (name, kind, base_oid, base_name, base_kind, domain_typmod,
     element_oid, element_name, element_kind, delimiter, labels) = facts
    return TypeInfo(
        name=name,
        kind=kind,
        base_oid=base_oid,
        base_name=base_name,
        base_kind=base_kind,
        domain_typmod=-1 if domain_typmod is None else domain_typmod,
        labels=tuple(labels or ()),
        element_oid=element_oid,
        element_name=element_name,
        element_kind=element_kind or "b",
        delimiter=delimiter or ",",
    )
