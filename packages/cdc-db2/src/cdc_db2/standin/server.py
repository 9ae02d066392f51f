"""``StandIn``: one Db2 database with SQL Replication, built on a database of a throwaway PostgreSQL."""

from __future__ import annotations

import time
from typing import Any

import psycopg
from psycopg import sql

from cdc_db2.standin import catalog_sql
from cdc_db2.standin.agent import CaptureAgent, pg_lsn_int
from cdc_db2.standin.ddl import column_type, default_clause


class StandIn:
    """Db2's catalog views and ASN objects on PostgreSQL database ``dbname``, and the capture agent filling them."""

    def __init__(self, pg: Any, dbname: str, agent_interval: float = 0.05):
        """Create the catalog views and the ASN control tables and routines in ``dbname``; the agent's slot."""
        self.pg = pg
        self.dbname = dbname
        self.conninfo = pg.conninfo(dbname)
        self.slot = ("standin_asncap_" + dbname.lower())[:63]
        self.agent = CaptureAgent(self.conninfo, self.slot, agent_interval)
        with self._connect() as conn:
            conn.execute(catalog_sql.OBJECTS)
            conn.execute("SELECT pg_create_logical_replication_slot(%s, 'test_decoding')", (self.slot,))

    def _connect(self) -> psycopg.Connection:
        """An autocommit connection in UTC."""
        return psycopg.connect(self.conninfo, autocommit=True, options="-c TimeZone=UTC")

    def execute(self, statement: str, params: Any = None) -> list[tuple[Any, ...]]:
        """Run PostgreSQL ``statement`` (a writer of the source tables, as an application is)."""
        with self._connect() as conn:
            cur = conn.execute(statement, params)
            return cur.fetchall() if cur.description else []

    def create_table(self, schema: str, table: str, columns: list[tuple[str, str]], key: list[str] | None = None) -> None:
        """``CREATE TABLE schema.table (name db2type [constraints], ...)`` with Db2's types recorded for SYSCAT."""
        defs, types = [], []
        for name, text in columns:
            ctype, rest = column_type(text)
            default, rest = default_clause(ctype.typename, rest)
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
        ctype, rest = column_type(db2_type)
        default, rest = default_clause(ctype.typename, rest)
        cd = self.execute("SELECT cd_table FROM asncdc.ibmsnap_register WHERE source_owner = %s AND source_table = %s",
                          (schema, table))[0][0]
        self.set_state(schema, table, "I")
        self.execute("SELECT asncdc.asncdcservices('reinit', 'asncdc')")
        with self._connect() as conn, conn.transaction():
            conn.execute(sql.SQL("ALTER TABLE {} ADD COLUMN {} {} {}").format(
                sql.Identifier(schema, table), sql.Identifier(column), sql.SQL(ctype.pg_type), sql.SQL(rest)))
            conn.execute("INSERT INTO standin.column_types VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                         (schema, table, column, ctype.typename, ctype.length, ctype.scale, ctype.codepage, default))
            conn.execute(sql.SQL("ALTER TABLE {} ADD COLUMN {} {}").format(
                sql.Identifier("ASNCDC", cd), sql.Identifier(column), sql.SQL(ctype.pg_type)))
        self.set_state(schema, table, "A")
        self.execute("SELECT asncdc.asncdcservices('reinit', 'asncdc')")

    def set_state(self, schema: str, table: str, state: str) -> None:
        """Mark a registered table ``A`` (ACTIVE) or ``I`` (INACTIVE) in IBMSNAP_REGISTER."""
        self.execute("UPDATE asncdc.ibmsnap_register SET state = %s WHERE source_owner = %s AND source_table = %s",
                     (state, schema, table))

    def wait_captured(self, timeout: float = 30.0) -> None:
        """Wait until the agent has captured every transaction committed before this call."""
        target = pg_lsn_int(self.execute("SELECT pg_current_wal_lsn()::text")[0][0])
        deadline = time.monotonic() + timeout
        while self.agent.caught_up < target:
            if self.agent.error is not None:
                raise RuntimeError(f"the capture agent failed: {self.agent.error}")
            if time.monotonic() > deadline:
                raise TimeoutError("the capture agent did not catch up")
            time.sleep(0.02)

    def properties(self, prefix: str = "mydatabase", **extra: Any) -> dict[str, Any]:
        """Debezium properties that reach this database through the stand-in's connection layer."""
        return {"connector.class": "io.debezium.connector.db2.Db2Connector",
                "database.hostname": self.pg.host, "database.port": self.pg.port, "database.user": self.pg.user,
                "database.password": "", "database.dbname": self.dbname, "topic.prefix": prefix,
                "poll.interval.ms": 100, **extra}
