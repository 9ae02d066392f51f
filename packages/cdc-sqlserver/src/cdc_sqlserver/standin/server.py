"""``StandIn``: one SQL Server database with CDC, built on a database of a throwaway PostgreSQL."""

from __future__ import annotations

from typing import Any

import psycopg

from cdc_postgres.standin.server import HostedDatabase
from cdc_sqlserver.standin import catalog_sql
from cdc_sqlserver.standin.agent import CaptureAgent, lsn_bytes
from cdc_sqlserver.standin.ddl import quote, record, translate_create_table
from cdc_sqlserver.standin.translate import PARSE_FUNCTION

_NOT_IN_RANGE = ("An insufficient number of arguments were supplied for the procedure or function "
                 "cdc.fn_cdc_get_all_changes_ ... .")


class StandIn(HostedDatabase):
    """SQL Server's CDC objects on PostgreSQL database ``dbname``, and the capture agent that fills them."""

    SLOT_PREFIX = "standin_capture_"
    AGENT = CaptureAgent

    def create_objects(self, conn: psycopg.Connection) -> None:
        """Create SQL Server's ``sys`` objects (``enable_db`` adds the ``cdc`` ones and the agent's slot)."""
        conn.execute(catalog_sql.SERVER_OBJECTS)
        conn.execute(PARSE_FUNCTION)
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO sys.types VALUES (%s, %s, %s)", catalog_sql.types_rows())
            # sysname: SQL Server's own alias type (user_type_id 256, nvarchar(128))
            cur.execute("INSERT INTO sys.types VALUES (256, %s, 'sysname')", (catalog_sql.TYPES["nvarchar"],))
            cur.execute("INSERT INTO standin.alias_types VALUES ('sysname', 'nvarchar(128)')")

    def create_type(self, name: str, base: str) -> None:
        """``CREATE TYPE <name> FROM <base>``: an alias type (sys.types: a user_type_id above 256, the base's
        system_type_id), usable in later CREATE TABLEs."""
        base_name = base.strip().lstrip("[").split("(")[0].split("]")[0].strip().lower()
        if base_name not in catalog_sql.TYPES:
            raise ValueError(f"CREATE TYPE {name}: the stand-in has no base type {base!r}")
        with self._connect() as conn, conn.transaction():
            conn.execute("INSERT INTO sys.types SELECT GREATEST(256, MAX(user_type_id)) + 1, %s, %s FROM sys.types",
                         (catalog_sql.TYPES[base_name], name))
            conn.execute("INSERT INTO standin.alias_types VALUES (%s, %s)", (name, base))

    def _aliases(self) -> dict[str, tuple[str, str]]:
        """The alias types: lower-case name -> (name as created, base type's T-SQL)."""
        with self._connect() as conn:
            return {n.lower(): (n, b) for n, b in conn.execute("SELECT name, base FROM standin.alias_types").fetchall()}

    def create_table(self, ddl: str) -> None:
        """``CREATE TABLE`` given in T-SQL (the schema is created if missing)."""
        schema, table, pg_ddl, columns = translate_create_table(ddl, self._aliases())
        with self._connect() as conn, conn.transaction():
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {quote(schema)}")
            conn.execute(pg_ddl)
            record(conn, schema, table, columns)

    def add_column(self, schema: str, table: str, column: str, tsql_type: str) -> None:
        """``ALTER TABLE <schema>.<table> ADD <column> <tsql_type>`` (the T-SQL type recorded for the catalog)."""
        _, _, pg_ddl, columns = translate_create_table(f"CREATE TABLE {schema}.{table} ({column} {tsql_type})",
                                                       self._aliases())
        pg_type = pg_ddl[pg_ddl.index("(") + 1:pg_ddl.rindex(")")].split(" ", 1)[1]
        with self._connect() as conn, conn.transaction():
            conn.execute(f"ALTER TABLE {quote(schema)}.{quote(table)} ADD COLUMN {quote(column)} {pg_type}")
            record(conn, schema, table, columns)

    def alter_column(self, schema: str, table: str, column: str, tsql_type: str) -> None:
        """``ALTER TABLE <schema>.<table> ALTER COLUMN <column> <tsql_type>`` (the catalog's type changes)."""
        _, _, pg_ddl, columns = translate_create_table(f"CREATE TABLE {schema}.{table} ({column} {tsql_type})",
                                                       self._aliases())
        pg_type = pg_ddl[pg_ddl.index("(") + 1:pg_ddl.rindex(")")].split(" ", 1)[1].replace(" NOT NULL", "")
        with self._connect() as conn, conn.transaction():
            conn.execute(f"ALTER TABLE {quote(schema)}.{quote(table)} ALTER COLUMN {quote(column)} TYPE {pg_type} "
                         f"USING {quote(column)}::{pg_type}")  # SQL Server converts VARCHAR '10' to INT
            # "If an existing column undergoes a change in its data type, the change is propagated to the change
            # table" (SQL Server's CDC documentation): every capture instance capturing the column.
            for (ct,) in conn.execute(
                    "SELECT ct.capture_instance FROM cdc.change_tables ct JOIN cdc.captured_columns cc "
                    "ON cc.object_id = ct.object_id WHERE ct.source_object_id = %s::regclass::oid::int "
                    "AND cc.column_name = %s", (f"{quote(schema)}.{quote(table)}", column)).fetchall():
                conn.execute(f"ALTER TABLE cdc.{quote(ct + '_CT')} ALTER COLUMN {quote(column)} TYPE {pg_type} "
                             f"USING {quote(column)}::{pg_type}")
            conn.execute("DELETE FROM standin.column_types WHERE object_id = %s::regclass::oid::int "
                         "AND column_name = %s", (f"{quote(schema)}.{quote(table)}", column))
            record(conn, schema, table, columns)

    def set_default(self, schema: str, table: str, column: str, definition: str | None) -> None:
        """``ALTER TABLE ... ADD DEFAULT <definition> FOR <column>`` (None: DROP CONSTRAINT): ``definition`` as
        sys.default_constraints keeps it (``('default_value')``)."""
        source = f"{quote(schema)}.{quote(table)}"
        with self._connect() as conn, conn.transaction():
            conn.execute("UPDATE standin.column_types SET default_definition = %s "
                         "WHERE object_id = %s::regclass::oid::int AND column_name = %s", (definition, source, column))

    def enable_db(self) -> None:
        """``sys.sp_cdc_enable_db``: the ``cdc`` schema, metadata, LSN functions, and the agent's slot."""
        with self._connect() as conn:
            conn.execute(catalog_sql.CDC_OBJECTS)
            conn.execute("SELECT pg_create_logical_replication_slot(%s, 'test_decoding')", (self.slot,))

    def enable_table(self, schema: str, table: str, capture_instance: str | None = None,
                     columns: list[str] | None = None) -> str:
        """``sys.sp_cdc_enable_table``: a capture instance (default ``<schema>_<table>``) starting at the current LSN."""
        ci = capture_instance or f"{schema}_{table}"
        source = f"{quote(schema)}.{quote(table)}"
        with self._connect() as conn, conn.transaction():
            oid = conn.execute("SELECT %s::regclass::oid::int", (source,)).fetchone()[0]
            cols = conn.execute(
                "SELECT a.attname::text, a.attnum, format_type(a.atttypid, a.atttypmod), ct.type_name "
                "FROM pg_attribute a JOIN standin.column_types ct ON ct.object_id = a.attrelid::int "
                "AND ct.column_name = a.attname::text WHERE a.attrelid = %s::oid AND a.attnum > 0 "
                "AND NOT a.attisdropped ORDER BY a.attnum", (oid,)).fetchall()
            if columns is not None:
                cols = [c for c in cols if c[0] in columns]
            ct_name = quote(ci + "_CT")
            defs = ", ".join(f"{quote(n)} {t}" for n, _, t, _ in cols)
            conn.execute(f'CREATE TABLE cdc.{ct_name} ("__$start_lsn" bytea NOT NULL, "__$end_lsn" bytea, '
                         f'"__$seqval" bytea NOT NULL, "__$operation" int NOT NULL, "__$update_mask" bytea'
                         f'{", " if defs else ""}{defs}, "__$command_id" int)')
            conn.execute(f'CREATE INDEX ON cdc.{ct_name} ("__$start_lsn", "__$seqval", "__$operation")')
            conn.execute(f"ALTER TABLE {source} REPLICA IDENTITY FULL")
            ct_oid = conn.execute("SELECT %s::regclass::oid::int", (f"cdc.{ct_name}",)).fetchone()[0]
            # The WAL insert position: every commit record written before has a lower LSN, every later one this or a
            # higher one (the write position can lag behind, so a commit there may be one that came first).
            start = lsn_bytes(conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0])
            conn.execute("INSERT INTO cdc.change_tables (object_id, source_object_id, capture_instance, start_lsn) "
                         "VALUES (%s, %s, %s, %s)", (ct_oid, oid, ci, start))
            conn.execute("INSERT INTO standin.tracked VALUES (%s) ON CONFLICT DO NOTHING", (oid,))
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO cdc.captured_columns VALUES (%s, %s, %s, %s, %s, 0)",
                                [(ct_oid, n, num, tname, i) for i, (n, num, _, tname) in enumerate(cols, 1)])
            # SQL Server resolves names case-insensitively; sqlglot upper-cases a bracketed function name.
            for fn in {f"fn_cdc_get_all_changes_{ci}", f"fn_cdc_get_all_changes_{ci}".upper()}:
                conn.execute(f"""
                    CREATE FUNCTION cdc.{quote(fn)}(from_lsn bytea, to_lsn bytea, row_filter text)
                    RETURNS SETOF cdc.{ct_name} LANGUAGE plpgsql STABLE AS $fn$
                    BEGIN
                        IF from_lsn IS NULL OR to_lsn IS NULL OR from_lsn > to_lsn
                           OR from_lsn < sys.fn_cdc_get_min_lsn({_literal(ci)})
                           OR to_lsn > sys.fn_cdc_get_max_lsn() THEN
                            RAISE EXCEPTION {_literal(_NOT_IN_RANGE)} USING ERRCODE = '22023';
                        END IF;
                        IF lower(row_filter) NOT IN ('all', 'all update old') THEN
                            RAISE EXCEPTION 'invalid row filter %', row_filter USING ERRCODE = '22023';
                        END IF;
                        RETURN QUERY SELECT * FROM cdc.{ct_name}
                            WHERE "__$start_lsn" BETWEEN from_lsn AND to_lsn
                              AND (lower(row_filter) = 'all update old' OR "__$operation" <> 3);
                    END $fn$""")
        return ci

    def disable_table(self, schema: str, table: str, capture_instance: str) -> None:
        """``sys.sp_cdc_disable_table``: drop the capture instance, its change table and function."""
        with self._connect() as conn, conn.transaction():
            conn.execute("DELETE FROM cdc.captured_columns WHERE object_id = "
                         "(SELECT object_id FROM cdc.change_tables WHERE capture_instance = %s)", (capture_instance,))
            conn.execute("DELETE FROM cdc.change_tables WHERE capture_instance = %s", (capture_instance,))
            # The table's last instance gone: no longer tracked (sys.tables.is_tracked_by_cdc = 0).
            conn.execute("DELETE FROM standin.tracked t WHERE NOT EXISTS (SELECT 1 FROM cdc.change_tables ct "
                         "WHERE ct.source_object_id = t.source_object_id)")
            conn.execute(f"DROP TABLE cdc.{quote(capture_instance + '_CT')} CASCADE")

    def cleanup(self, low_water: bytes) -> None:
        """The cleanup job: drop change rows below ``low_water`` and move every instance's min LSN there."""
        with self._connect() as conn, conn.transaction():
            for (ci,) in conn.execute("SELECT capture_instance FROM cdc.change_tables").fetchall():
                conn.execute(f'DELETE FROM cdc.{quote(ci + "_CT")} WHERE "__$start_lsn" < %s', (low_water,))
            conn.execute("UPDATE cdc.change_tables SET start_lsn = %s WHERE start_lsn < %s", (low_water, low_water))
            conn.execute("DELETE FROM cdc.lsn_time_mapping WHERE start_lsn < %s", (low_water,))

    def properties(self, prefix: str = "server1", **extra: Any) -> dict[str, Any]:
        """Debezium properties that reach this database through the stand-in's connection layer."""
        return {"connector.class": "io.debezium.connector.sqlserver.SqlServerConnector",
                "database.hostname": self.pg.host, "database.port": self.pg.port, "database.user": self.pg.user,
                "database.password": "", "database.names": self.dbname, "topic.prefix": prefix,
                "database.encrypt": "false", "poll.interval.ms": 100, **extra}


def _literal(text: str) -> str:
    """A PostgreSQL string literal."""
    return "'" + text.replace("'", "''") + "'"
