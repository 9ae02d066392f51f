"""DDL read from the binlog: applied to the model, recorded in the history, turned into schema change events.

A statement the parser cannot read that touches captured tables is not guessed at: their
definitions are re-read from the server's catalog (beyond Debezium). Only if that fails too does
``schema.history.internal.skip.unparseable.ddl`` decide between skipping and stopping.
"""

from __future__ import annotations

from typing import Any

import pymysql

from cdc_core.errors import ConnectorError
from cdc_core.events import ChangeRecord

from cdc_mysql import config as myc
from cdc_mysql.catalog import Catalog
from cdc_mysql.ddl import AppliedDdl, UnparseableDdl
from cdc_mysql.ddl_filter import is_filtered_statement
from cdc_mysql.java_order import source_table
from cdc_mysql.model import TableChange
from cdc_mysql.schema_changes import schema_change_record
from cdc_mysql.streaming import DdlHandler


class DdlEvents(DdlHandler):
    """The connector's DdlHandler (a mixin: it uses the connector's model, filter, history and connection)."""

    def ddl(self, statement: str, database: str | None, position: dict[str, Any], source: dict[str, Any],
            offset: dict[str, Any]) -> tuple[AppliedDdl | None, list[ChangeRecord]]:
        """Apply a binlog DDL statement to the model; record it; return its schema change events."""
        assert self._history is not None
        log = self.log.with_context("streaming")
        try:
            applied = self.model.apply(statement, database)
        except UnparseableDdl as e:
            applied = self._unparseable(e, database, log)
            if applied is None:
                return None, []
        if applied.kind == "use":
            return applied, []
        if applied.kind in ("ignored", "truncate"):
            return applied, self._database_event(statement, database, applied, position, source, offset)
        if applied.statements:  # one event per table, with the statement Debezium writes for it
            records: list[ChangeRecord] = []
            tables = source_table(c.id for c in applied.changes)  # every event names all of the statement's tables
            for change in applied.changes:
                one = AppliedDdl(applied.kind, [change], [change.id.database])
                records += self._table_event(applied.statements[change.id], database, one, position, source, offset,
                                             tables)
            return applied, records
        return applied, self._table_event(statement, database, applied, position, source, offset)

    def _table_event(self, statement: str, database: str | None, applied: AppliedDdl, position: dict[str, Any],
                     source: dict[str, Any], offset: dict[str, Any], tables: str | None = None) -> list[ChangeRecord]:
        """Record a statement that changes tables or databases, and send its schema change event.

        As Debezium (BinlogDatabaseSchema.parseDdl, EventDispatcher.dispatchSchemaChangeEvent): with
        schema.history.internal.store.only.captured.tables.ddl=false (the default) every such statement
        is recorded and sent, whichever table or database it touches; with it true only those touching
        captured tables, with only those tables' changes; store.only.captured.databases.ddl skips the
        statements of databases outside the filter.
        """
        assert self._history is not None
        captured = [c for c in applied.changes if self.filter.includes(c.id)
                    or (c.previous_id is not None and self.filter.includes(c.previous_id))]
        dbs_captured = [d for d in applied.databases if self.filter.includes_database(d)]
        touches_captured = bool(captured) or (applied.kind == "database" and bool(dbs_captured))
        store_only = self.config.get(myc.STORE_ONLY_CAPTURED_TABLES)
        if store_only and not touches_captured:
            return []
        changes = captured if store_only else applied.changes
        db = changes[0].id.database if changes else (applied.databases[0] if applied.databases else database or "")
        if self.config.get(myc.STORE_ONLY_CAPTURED_DATABASES) and db and not self.filter.includes_database(db):
            return []
        self._history.record(position, database or db or None, statement, applied.changes)
        if not self.config.get(myc.INCLUDE_SCHEMA_CHANGES):
            return []
        table = tables if tables is not None else source_table(c.id for c in changes)
        return [schema_change_record(self.flavor, self.source_schema, self.schema_change_topic, db, statement, changes,
                                     dict(source, db=db, table=table), offset, self.partition())]

    def _database_event(self, statement: str, database: str | None, applied: AppliedDdl, position: dict[str, Any],
                        source: dict[str, Any], offset: dict[str, Any]) -> list[ChangeRecord]:
        """A statement that changes no table definition (TRUNCATE, CREATE FUNCTION, GRANT, ...): Debezium's event without tableChanges.

        Debezium (BinlogDatabaseSchema.parseDdl) records every such statement and sends it to the schema
        change topic, typed DATABASE (TRUNCATE: TRUNCATE, naming the table in ``source.table``), unless
        schema.history.internal.store.only.captured.tables.ddl keeps only those on captured tables.
        DML in the binlog's statement form and the statements of ``schema.history.internal.ddl.filter``'s
        default are skipped, as there.
        """
        if is_filtered_statement(statement):
            return []
        captured = [t for t in applied.truncated if self.filter.includes(t)]
        if self.config.get(myc.STORE_ONLY_CAPTURED_TABLES) and not captured:
            return []
        assert self._history is not None
        db = applied.truncated[0].database if applied.truncated else (database or "")
        self._history.record(position, db, statement, [])
        if not self.config.get(myc.INCLUDE_SCHEMA_CHANGES):
            return []
        # A statement the parser signals nothing for sets the table set to {null}: source.table is "".
        table = source_table(applied.truncated) if applied.truncated else ""
        return [schema_change_record(self.flavor, self.source_schema, self.schema_change_topic, db, statement, [],
                                     dict(source, db=db, table=table), offset, self.partition())]

    def _unparseable(self, e: UnparseableDdl, database: str | None, log: Any) -> AppliedDdl | None:
        """Re-read the tables an unparseable statement touches from the catalog; else skip or fail."""
        captured = [t for t in e.tables if self.filter.includes(t)]
        if captured and self._conn is not None:
            catalog = Catalog(self._conn)
            changes: list[TableChange] = []
            try:
                for tid in captured:
                    if tid.table in catalog.tables(tid.database):
                        known = tid in self.model.tables
                        change = catalog.read_table(self.model, tid)
                        changes.append(TableChange("ALTER" if known else "CREATE", tid, change.table))
                    elif self.model.tables.pop(tid, None) is not None:
                        changes.append(TableChange("DROP", tid, None))
            except (pymysql.err.MySQLError, UnparseableDdl) as again:
                log.warning("cannot re-read %s from the catalog either: %s", ", ".join(map(str, captured)), again)
            else:
                log.warning("cannot parse DDL statement (%s); re-read the definitions of %s from the server's "
                            "catalog instead: %s", e.reason, ", ".join(map(str, captured)), e.statement)
                return AppliedDdl("table", changes, sorted({t.database for t in captured}))
        if e.tables and not captured:
            log.warning("cannot parse DDL statement (%s) on tables that are not captured; ignoring it: %s",
                        e.reason, e.statement)
            return None
        if self.config.get(myc.SKIP_UNPARSEABLE_DDL):
            log.warning("cannot parse DDL statement (%s); skipping it (schema.history.internal.skip.unparseable.ddl"
                        "=true): %s", e.reason, e.statement)
            return None
        raise ConnectorError(f"cannot parse DDL statement ({e.reason}) in database {database!r}: {e.statement}. "
                             "Set schema.history.internal.skip.unparseable.ddl=true to skip statements the connector "
                             "cannot parse.")
