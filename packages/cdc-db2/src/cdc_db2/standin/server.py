"""``StandIn``: one Db2 database with SQL Replication, built on a database of a throwaway PostgreSQL."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from cdc_postgres.standin.server import HostedDatabase
from cdc_db2.standin import catalog_sql
from cdc_db2.standin.agent import CaptureAgent
from cdc_db2.standin.ddl import column_type, default_clause


class StandIn(HostedDatabase):
    """Db2's catalog views and ASN objects on PostgreSQL database ``dbname``, and the capture agent filling them."""

    SLOT_PREFIX = "standin_asncap_"
    AGENT = CaptureAgent

    def __init__(self, pg: Any, dbname: str, agent_interval: float = 0.05, platform: str = "LUW"):
        """``platform`` ``ZOS``: the catalog is z/OS's (``SYSIBM.SYSTABLES``/``SYSCOLUMNS``, no ``SYSCAT``)."""
        self.platform = platform.upper()
        super().__init__(pg, dbname, agent_interval)

    def create_objects(self, conn: psycopg.Connection) -> None:
        """Create the catalog views and the ASN control tables and routines; the agent's slot."""
        conn.execute(catalog_sql.OBJECTS)
        if self.platform == "ZOS":
            conn.execute(catalog_sql.ZOS_OBJECTS)
        conn.execute("SELECT pg_create_logical_replication_slot(%s, 'test_decoding')", (self.slot,))

    def create_table(self, schema: str, table: str, columns: list[tuple[str, str]], key: list[str] | None = None) -> None:
        """``CREATE TABLE schema.table (name db2type [constraints], ...)`` with Db2's types recorded for SYSCAT."""
        defs, types = [], []
        for name, text in columns:
            ctype, rest = column_type(text)
            default, rest = default_clause(ctype.typename, rest, ctype.scale)
            defs.append(sql.SQL("{} {} {}").format(sql.Identifier(name), sql.SQL(ctype.pg_type), sql.SQL(rest)))
            types.append((schema, table, name, ctype.typename, ctype.length, ctype.scale, ctype.codepage, default))
        if key:
            defs.append(sql.SQL("PRIMARY KEY ({})").format(sql.SQL(", ").join(map(sql.Identifier, key))))
        with self._connect() as conn, conn.transaction():
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
            conn.execute(sql.SQL("CREATE TABLE {} ({})").format(sql.Identifier(schema, table),
                                                               sql.SQL(", ").join(defs)))
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO standin.column_types VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", types)
            _values_trigger(conn, schema, table)

    def add_table(self, schema: str, table: str, delete_insert: bool = True) -> None:
        """``CALL ASNCDC.ADDTABLE(schema, table)`` then ``reinit``: the table enters capture mode.

        ``delete_insert`` False registers it with ``CHG_UPD_TO_DEL_INS='N'``: updates as one ``U`` row (z/OS).
        """
        self.execute("CALL asncdc.addtable(%s, %s)", (schema, table))
        if not delete_insert:
            self.execute("UPDATE asncdc.ibmsnap_register SET chg_upd_to_del_ins = 'N' WHERE source_owner = %s "
                         "AND source_table = %s", (schema, table))
        self.execute("SELECT asncdc.asncdcservices('reinit', 'asncdc')")

    def remove_table(self, schema: str, table: str) -> None:
        """``CALL ASNCDC.REMOVETABLE(schema, table)`` then ``reinit``: the table leaves capture mode."""
        self.execute("CALL asncdc.removetable(%s, %s)", (schema, table))
        self.execute("SELECT asncdc.asncdcservices('reinit', 'asncdc')")

    def add_column(self, schema: str, table: str, column: str, db2_type: str) -> None:
        """The chapter's online schema update, a column added at the end (DB2-53): INACTIVE, reinit, ALTER the
        source table, ALTER its CD table, ACTIVE, reinit."""
        cd = self.cd_table(schema, table)
        self.set_state(schema, table, "I")
        self.execute("SELECT asncdc.asncdcservices('reinit', 'asncdc')")
        with self._connect() as conn, conn.transaction():
            pg_type = _add_source_column(conn, schema, table, column, db2_type)
            conn.execute(sql.SQL("ALTER TABLE {} ADD COLUMN {} {}").format(
                sql.Identifier("ASNCDC", cd), sql.Identifier(column), sql.SQL(pg_type)))
        self.set_state(schema, table, "A")
        self.execute("SELECT asncdc.asncdcservices('reinit', 'asncdc')")

    def alter_add_column(self, schema: str, table: str, column: str, db2_type: str, cd: bool = False) -> None:
        """``ALTER TABLE schema.table ADD COLUMN column db2_type`` and nothing else: the source table only (Debezium's
        offline procedure re-registers the table afterwards), with ``cd`` its CD table too (the online one, whose
        INACTIVE/ACTIVE and reinit the caller does)."""
        with self._connect() as conn, conn.transaction():
            pg_type = _add_source_column(conn, schema, table, column, db2_type)
            if cd:
                conn.execute(sql.SQL("ALTER TABLE {} ADD COLUMN {} {}").format(
                    sql.Identifier("ASNCDC", self.cd_table(schema, table)), sql.Identifier(column), sql.SQL(pg_type)))

    def set_default(self, schema: str, table: str, column: str, default: str, cd: bool = False) -> None:
        """``ALTER TABLE schema.table ALTER COLUMN column SET DEFAULT default`` (Db2 SQL's constant or register),
        SYSCAT.COLUMNS.DEFAULT as Db2 stores it; ``cd``: the CD table's column too (the online procedure)."""
        with self._connect() as conn, conn.transaction():
            typename, scale = conn.execute("SELECT typename, scale FROM standin.column_types WHERE tabschema = %s "
                                           "AND tabname = %s AND colname = %s", (schema, table, column)).fetchone()
            db2, pg = default_clause(typename, f"DEFAULT {default}", scale)
            conn.execute(sql.SQL("ALTER TABLE {} ALTER COLUMN {} SET {}").format(
                sql.Identifier(schema, table), sql.Identifier(column), sql.SQL(pg)))
            conn.execute('UPDATE standin.column_types SET "default" = %s WHERE tabschema = %s AND tabname = %s '
                         "AND colname = %s", (db2, schema, table, column))
            if cd:
                conn.execute(sql.SQL("ALTER TABLE {} ALTER COLUMN {} SET {}").format(
                    sql.Identifier("ASNCDC", self.cd_table(schema, table)), sql.Identifier(column), sql.SQL(pg)))

    def cd_table(self, schema: str, table: str) -> str:
        """The name of a registered table's CD table (schema ``ASNCDC``)."""
        return self.execute("SELECT cd_table FROM asncdc.ibmsnap_register WHERE source_owner = %s "
                            "AND source_table = %s", (schema, table))[0][0]

    def set_state(self, schema: str, table: str, state: str) -> None:
        """Mark a registered table ``A`` (ACTIVE) or ``I`` (INACTIVE) in IBMSNAP_REGISTER."""
        self.execute("UPDATE asncdc.ibmsnap_register SET state = %s WHERE source_owner = %s AND source_table = %s",
                     (state, schema, table))

    def properties(self, prefix: str = "mydatabase", **extra: Any) -> dict[str, Any]:
        """Debezium properties that reach this database through the stand-in's connection layer."""
        return {"connector.class": "io.debezium.connector.db2.Db2Connector",
                "database.hostname": self.pg.host, "database.port": self.pg.port, "database.user": self.pg.user,
                "database.password": "", "database.dbname": self.dbname, "topic.prefix": prefix,
                "poll.interval.ms": 100, **extra}


def _values_trigger(conn: psycopg.Connection, schema: str, table: str) -> None:
    """(Re)create the trigger storing a table's values as Db2 does: TIMESTAMP(7..12) in Db2's string form at their
    precision, DECFLOAT rounded to its 16 or 34 digits (catalog_sql: standin.db2_values)."""
    rows = conn.execute("SELECT colname, CASE typename WHEN 'TIMESTAMP' THEN 'T' ELSE 'D' END, "
                        "CASE typename WHEN 'TIMESTAMP' THEN scale WHEN 'DECFLOAT' THEN CASE length WHEN 8 THEN 16 "
                        "ELSE 34 END END FROM standin.column_types WHERE tabschema = %s AND tabname = %s AND "
                        "((typename = 'TIMESTAMP' AND scale > 6) OR typename = 'DECFLOAT') ORDER BY colname",
                        (schema, table)).fetchall()
    conn.execute(sql.SQL("DROP TRIGGER IF EXISTS standin_db2_values ON {}").format(sql.Identifier(schema, table)))
    if rows:
        args = sql.SQL(", ").join(sql.Literal(str(v)) for row in rows for v in row)
        conn.execute(sql.SQL("CREATE TRIGGER standin_db2_values BEFORE INSERT OR UPDATE ON {} FOR EACH ROW "
                             "EXECUTE FUNCTION standin.db2_values({})").format(sql.Identifier(schema, table), args))


def _add_source_column(conn: psycopg.Connection, schema: str, table: str, column: str, db2_type: str) -> str:
    """Add a column to a source table with its Db2 description; its PostgreSQL type."""
    ctype, rest = column_type(db2_type)
    default, rest = default_clause(ctype.typename, rest, ctype.scale)
    conn.execute(sql.SQL("ALTER TABLE {} ADD COLUMN {} {} {}").format(
        sql.Identifier(schema, table), sql.Identifier(column), sql.SQL(ctype.pg_type), sql.SQL(rest)))
    conn.execute("INSERT INTO standin.column_types VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                 (schema, table, column, ctype.typename, ctype.length, ctype.scale, ctype.codepage, default))
    _values_trigger(conn, schema, table)
    return ctype.pg_type
