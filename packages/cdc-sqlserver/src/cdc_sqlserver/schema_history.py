"""SQL Server's schema history and schema change events: CREATE per table at the snapshot (cdc_sqlserver.schema_tables), ALTER on a new capture instance.

As SqlServerDatabaseSchema / SqlServerSchemaChangeEventEmitter (2.7.4): the table structure comes
from the catalog (JDBC metadata in Debezium, ``sys.columns`` here) restricted to the capture
instance's columns; every change is a history record ``{source: {server, database}, position,
databaseName, schemaName, ddl, tableChanges}`` in the configured ``schema.history.internal`` store,
and, with ``include.schema.changes`` (the default), an event on the ``<topic.prefix>`` topic. The
snapshot's CREATE events carry ``ddl: null`` (SchemaChangeEvent.ofSnapshotCreate); streaming's
ALTER/CREATE carry ``"N/A"``, as the emitter sets it.

When the streaming side meets a change whose capture instance describes its table differently from
the last recorded structure (a new instance after an ALTER took over), the ALTER is recorded and sent
just before that change, at the position of the change before it (Debezium's migrateTable runs at
the first change at or after the new instance's start LSN); when no change of it comes, at the end
of the poll whose window reached the instance's start LSN (a ``TableCheck`` the streaming side
yields; Debezium: at the start of the next iteration, the same position). A table first seen while
streaming (CDC enabled later) gets a CREATE, at the first poll that reaches its capture instance. On
restart the known structures are replayed from the history, up to
the stored offset, so an ALTER that happened while the connector was down is still announced;
records after the offset (written, never acknowledged) are ignored, as Debezium's recovery does.

A table's older capture instance (one a newer instance replaces) converts with the structure the
history last recorded (``table_from_history``), not the live catalog's, as Debezium's
getChangeTablesToQuery sets the current change table's source table from the schema: a column whose
type changed while the connector was down keeps its recorded type until the new instance starts. So
does a table's only instance once streaming has passed its start: a column whose type changed with
no new capture instance converts with the recorded type and no ALTER is announced, until a new
capture instance starts (then its ALTER, with the catalog's structure).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from cdc_core.errors import SchemaHistoryError
from cdc_core.events import ChangeRecord, Checkpoint, RawChange
from cdc_core.relational import Table
from cdc_core.schema import Schema
from cdc_core.schema_change_events import schema_change_record
from cdc_sqlserver.jdbc import _MAX, _NMAX, JDBC_TYPES, base_of, column_size, decimal_digits, jdbc_type, type_name
from cdc_sqlserver.lsn import Lsn
from cdc_sqlserver.source import source_block
from cdc_sqlserver.types import ColumnInfo, column

HISTORY_VERSION = 1
#: ``SchemaHistory._record``'s event_offset for an event that carries no offset.
_NO_OFFSET: Any = object()


class TableCheck(NamedTuple):
    """A capture instance whose start LSN streaming reached: its structure is checked (an ALTER/CREATE if new).

    The streaming side yields it inside a batch; ``SchemaHistory.watch`` replaces it with the event (or
    drops it), so nothing downstream sees it. Debezium migrates a table at the first change at or
    after the new instance's start LSN, or at the start of the next iteration when none comes.
    """

    table: Table


def table_id_text(table: Table) -> str:
    """Debezium's quoted id: ``"db"."schema"."table"``."""
    return ".".join('"' + p.replace('"', '""') + '"' for p in (table.id.catalog, table.id.schema, table.id.table) if p)


def column_json(column: Any) -> dict[str, Any]:
    """One column of a ``tableChanges`` entry, from the ``sys.columns`` facts the column was built from."""
    info = column.extra["info"]
    name = type_name(info)
    return {"name": column.name, "jdbcType": jdbc_type(info), "nativeType": None, "typeName": name,
            "typeExpression": name, "charsetName": None, "length": column_size(info), "scale": decimal_digits(info),
            "position": column.position, "optional": column.optional, "autoIncremented": False, "generated": False,
            "comment": None, "hasDefaultValue": info.default is not None,
            "defaultValueExpression": info.default, "enumValues": []}


def table_json(table: Table) -> dict[str, Any]:
    """The ``table`` of a ``tableChanges`` entry."""
    return {"defaultCharsetName": None, "primaryKeyColumnNames": list(table.primary_key),
            "columns": [column_json(c) for c in table.columns], "attributes": [], "comment": None}


def column_info(doc: dict[str, Any]) -> ColumnInfo:
    """The ``sys.columns`` facts of a recorded column (column_json's inverse, as far as conversion needs)."""
    name = doc["typeName"]
    identity = name.endswith(" identity")
    alias = name[:-len(" identity")] if identity else name
    length, scale = doc.get("length"), doc.get("scale") or 0
    # An alias type records its own name; its base follows from what getColumns gave (jdbcType, length, scale).
    t = alias if alias in JDBC_TYPES else base_of(doc.get("jdbcType"), length, doc.get("scale"))
    max_length = precision = 0
    if t in ("char", "varchar", "binary", "varbinary"):
        max_length = -1 if length == _MAX else int(length or 0)
    elif t in ("nchar", "nvarchar"):
        max_length = -1 if length == _NMAX else int(length or 0) * 2
    else:
        precision = int(length or 0)
    return ColumnInfo(doc["name"], int(doc.get("position") or 0), alias, max_length, precision, int(scale),
                      bool(doc["optional"]), identity, doc.get("defaultValueExpression"), None if t == alias else t)


def signature(table_doc: dict[str, Any]) -> tuple[Any, ...]:
    """What makes two structures of a table the same (names, types, sizes, nullability, key)."""
    return (tuple((c["name"], c["typeName"], c["length"], c["scale"], c["optional"], c.get("defaultValueExpression"))
                  for c in table_doc["columns"]),
            tuple(table_doc.get("primaryKeyColumnNames") or ()))


def position_key(offset: dict[str, Any]) -> tuple[bytes, bytes, int]:
    """A SQL Server offset's order: commit LSN, change LSN, event serial number (NULL first)."""
    return (Lsn.parse(offset.get("commit_lsn")).key(), Lsn.parse(offset.get("change_lsn")).key(),
            int(offset.get("event_serial_no") or 0))


class SchemaHistory:
    """One database's recorded table structures; turns structure changes into history records and events."""

    def __init__(self, store: Any, server: str, db: str, source_schema: Schema, topic: str,
                 partition: dict[str, Any], include_events: bool, log: Any):
        """Record into ``store``; send events to ``topic`` when ``include_events``."""
        self.store = store
        self.server = server
        self.db = db
        self.source_schema = source_schema
        self.topic = topic
        self.partition = partition
        self.include_events = include_events
        self.log = log
        #: identifier (``schema.table``) -> signature of the last recorded structure.
        self.known: dict[str, tuple[Any, ...]] = {}
        #: identifier -> the last recorded ``table`` document (for table_from_history).
        self.docs: dict[str, dict[str, Any]] = {}
        #: Tables first seen after a restart without history are recorded without an event.
        self.adopt = False
        self._checked: dict[int, Table] = {}
        #: Structures a blocking snapshot superseded (``id`` -> the Table, kept alive): the rest of the window
        #: streaming was in converts with them, and no ALTER back to them is due (see superseded()).
        self._superseded: dict[int, Table] = {}

    # -- recovery ----------------------------------------------------------------------------

    def recover(self, offset: dict[str, Any] | None) -> int:
        """Replay this database's records at or before ``offset``; returns how many were applied."""
        self.known.clear()
        self.docs.clear()
        if offset is None:
            return 0
        limit = position_key(offset)
        count = 0
        for record in self.store.records():
            if not isinstance(record, dict) or not isinstance(record.get("position"), dict):
                raise SchemaHistoryError(f"schema history record without a position: {str(record)[:200]}")
            if (record.get("source") or {}).get("database", self.db) != self.db:
                continue
            if position_key(record["position"]) > limit:
                continue
            for change in record.get("tableChanges") or []:
                ident = _identifier(change["id"])
                if change["type"] == "DROP" or change.get("table") is None:
                    self.known.pop(ident, None)
                    self.docs.pop(ident, None)
                else:
                    self.known[ident] = signature(change["table"])
                    self.docs[ident] = change["table"]
            count += 1
        if not count:
            self.adopt = True
            self.log.warning("the schema history holds no record of database %s at or before the stored offset: the "
                             "table structures are taken from the capture instances as they are now (and recorded)",
                             self.db)
        return count

    def table_from_history(self, live: Table, captured: list[str], modes: Any,
                           parse: Callable[[str, str], Any] | None) -> Table | None:
        """``live``'s table as the history last recorded it, restricted to ``captured`` (None if unknown or
        if the record names a column the capture instance does not capture).

        The defaults come again from the recorded ``defaultValueExpression`` through the same converter, as
        Debezium's recovered tables go through TableSchemaBuilder's parseDefaultValue: temporal ones are
        PARSEd by the server (``parse``, on the connector's connection; cdc_sqlserver.server_parse)."""
        doc = self.docs.get(live.id.identifier)
        if doc is None:
            return None
        names = set(captured)
        docs = doc["columns"]
        if not docs or any(c["name"] not in names for c in docs):
            return None
        if signature(doc) == signature(table_json(live)):
            return live
        return Table(live.id, [column(column_info(c), modes, parse) for c in docs],
                     list(doc.get("primaryKeyColumnNames") or ()))

    # -- recording ---------------------------------------------------------------------------

    def _record(self, kind: str, table: Table, doc: dict[str, Any], position: dict[str, Any], ddl: str | None,
                source: dict[str, Any], emit: bool, event_offset: Any = None) -> ChangeRecord | None:
        """Append the history record; return the event (None when schema changes are not sent), whose offset is
        ``event_offset`` if given (``_NO_OFFSET``: none), else ``position``."""
        change = {"type": kind, "id": table_id_text(table), "table": doc}
        self.store.append({"version": HISTORY_VERSION, "source": {"server": self.server, "database": self.db},
                           "position": dict(position), "ts_ms": time.time_ns() // 1_000_000, "databaseName": self.db,
                           "schemaName": table.id.schema, "ddl": ddl, "tableChanges": [change]})
        self.known[table.id.identifier] = signature(doc)
        self.docs[table.id.identifier] = doc
        if not (emit and self.include_events):
            return None
        offset = dict(position) if event_offset is None else None if event_offset is _NO_OFFSET else event_offset
        return schema_change_record("sqlserver", self.source_schema, self.topic, self.db, table.id.schema, ddl,
                                    [change], source, offset, self.partition)

    def snapshot_events(self, tables: list[Table], offset: dict[str, Any], last: bool = False) -> list[ChangeRecord]:
        """CREATE for each of ``tables`` at the snapshot's position (``ddl`` null, ``snapshot`` true).

        ``last``: no data follows (``no_data``): the last CREATE's ``snapshot`` is ``last``, as 2.7.4's
        RelationalSnapshotChangeEventSource.createSchemaChangeEventsForTables marks it ("If data are not
        snapshotted then the last schema change must set last snapshot flag"; SchemaHistoryTopicIT.
        streamingSchemaChanges expects true, true, last).
        """
        out = []
        lsn = offset.get("commit_lsn")
        for n, table in enumerate(tables, 1):
            marker = "last" if last and n == len(tables) else "true"
            source = source_block(self.server, self.db, time.time_ns() // 1000, marker, table.id.schema or "",
                                  table.id.table, None, lsn, None)
            event = self._record("CREATE", table, table_json(table), offset, None, source, True)
            if event is not None:
                out.append(event)
        return out

    def blocking_snapshot_events(self, tables: list[Table], position: dict[str, Any],
                                 event_offset: dict[str, Any] | None,
                                 lsns: tuple[str | None, str | None, int | None]) -> list[ChangeRecord]:
        """CREATE for each table a blocking snapshot reads, with the structure it read, before its rows.

        As Debezium 2.7.4, whose blocking task has ``snapshotSchema`` true: createSchemaChangeEventsForTables
        records and sends a CREATE (``ddl`` null, ``source.snapshot`` true) for each of the snapshot's tables
        (capturedSchemaTables is capturedTables for an on-demand snapshot: the signalled tables, in the
        order they are read), so the history then holds the catalog's structure and streaming converts
        with it. ``position`` places the record in the history (the stream position the snapshot paused
        at: a restart replays it once the stored offset has reached the signal); ``event_offset`` is the
        events' offset (the blocking snapshot's own, so a crash after one resumes it); ``lsns`` the
        source block's ``change_lsn``, ``commit_lsn``, ``event_serial_no`` (as the snapshot's rows).
        """
        out = []
        for table in tables:
            source = source_block(self.server, self.db, time.time_ns() // 1000, "true", table.id.schema or "",
                                  table.id.table, *lsns)
            self.log.info("CREATE of %s (blocking snapshot)", table.id)
            event = self._record("CREATE", table, table_json(table), position, None, source, True,
                                 _NO_OFFSET if event_offset is None else dict(event_offset))
            if event is not None:
                out.append(event)
        return out

    def superseded(self, tables: list[Table]) -> None:
        """Structures streaming still holds that a blocking snapshot's CREATE replaced: no event for them.

        The blocking snapshot runs at the end of a poll round (as Debezium's, whose stream pauses after its
        iteration); streaming converts with the recorded structures from its next window on. With
        ``tasks.max`` > 1 a database's task thread may be in a window still, converting with the old
        structure while the snapshot records the new one: as for Debezium's changes streamed before its
        pause, nothing is announced for them (no ALTER back to the old structure).
        """
        for table in tables:
            self._superseded[id(table)] = table

    def _table_check(self, check: TableCheck, previous: dict[str, Any]) -> ChangeRecord | None:
        """The CREATE/ALTER of a capture instance reached without a change of it, at the last position."""
        table = check.table
        source = source_block(self.server, self.db, time.time_ns() // 1000, "false", table.id.schema or "",
                              table.id.table, previous.get("change_lsn"), previous.get("commit_lsn"),
                              previous.get("event_serial_no"))
        return self._structure(table, previous, source)

    def _streaming_change(self, change: RawChange, previous: dict[str, Any]) -> ChangeRecord | None:
        """The CREATE/ALTER due before ``change``, if its table's structure is new."""
        if self._checked.get(change.table.id.identifier) is change.table:
            return None  # the common case, without building a source block
        source = {**change.source, "snapshot": "false", "change_lsn": previous.get("change_lsn"),
                  "commit_lsn": previous.get("commit_lsn"), "event_serial_no": previous.get("event_serial_no")}
        return self._structure(change.table, previous, source)

    def _structure(self, table: Table, previous: dict[str, Any], source: dict[str, Any]) -> ChangeRecord | None:
        """The CREATE/ALTER of ``table`` if its structure differs from the recorded one (once per Table object)."""
        if self._checked.get(table.id.identifier) is table or id(table) in self._superseded:
            return None
        self._checked[table.id.identifier] = table
        doc = table_json(table)
        known = self.known.get(table.id.identifier)
        if known == signature(doc):
            return None
        adopt = known is None and self.adopt
        kind = "CREATE" if known is None else "ALTER"
        if not adopt:
            self.log.info("%s of %s: %s", kind, table.id, ", ".join(c["name"] for c in doc["columns"]))
        return self._record(kind, table, doc, previous, "N/A", source, not adopt)

    # -- the stream --------------------------------------------------------------------------

    def watch(self, batches: Iterator[list[Any]], snapshot_tables: Any, offset: dict[str, Any] | None,
              snapshotting: Any = lambda: False) -> Iterator[list[Any]]:
        """Pass ``batches`` on, with schema change events inserted where structures change.

        ``snapshot_tables()`` names the tables whose CREATE opens a snapshot: sent before the first
        record carrying a snapshot offset (data, or the no_data checkpoint) when there was no stored
        offset or ``snapshotting()`` says a snapshot runs (a restart's idle position may be a
        completed snapshot's offset: no snapshot then). The per-change cost is an
        identity check of the change's table against the previous change's (a batch is copied only
        where an event goes in).
        """
        tail: dict[str, Any] = dict(offset or {})  # the last offset before the current batch
        snapshot_due = True  # until the snapshot's first record, or the first streamed change
        last_table = None
        for batch in batches:
            out: list[Any] | None = None
            done = 0
            for i in range(len(batch)):
                item = batch[i]
                if item.__class__ is TableCheck:
                    out = [] if out is None else out
                    out += batch[done:i]
                    event = self._table_check(item, _before(batch, i, tail))
                    if event is not None:
                        out.append(event)
                    done = i + 1
                    continue
                if item.__class__ is RawChange:
                    if item.table is last_table:
                        continue
                    if item.op == "r":
                        if not snapshot_due:
                            continue
                    else:
                        snapshot_due = False
                        last_table = item.table
                        event = self._streaming_change(item, _before(batch, i, tail))
                        if event is not None:
                            out = [] if out is None else out
                            out += batch[done:i]
                            out.append(event)
                            done = i
                        continue
                if snapshot_due and isinstance(item, (RawChange, Checkpoint)):
                    item_offset = item.offset
                    if isinstance(item_offset, dict) and item_offset.get("snapshot") and (
                            offset is None or snapshotting()):
                        snapshot_due = False
                        self.known.clear()
                        self._checked.clear()
                        self.adopt = False
                        position = {**item_offset, "snapshot_completed": False}
                        out = [] if out is None else out
                        out += batch[done:i]
                        # No data snapshot running: no_data, the last CREATE closes the snapshot.
                        out.extend(self.snapshot_events(snapshot_tables(), position, last=not snapshotting()))
                        done = i
            tail = _before(batch, len(batch), tail)
            if out is None:
                yield batch
            else:
                out += batch[done:]
                yield out


def _before(batch: list[Any], i: int, tail: dict[str, Any]) -> dict[str, Any]:
    """The offset of the last item before index ``i`` that has one (``tail``, the previous batch's, if none)."""
    for j in range(i - 1, -1, -1):
        item = batch[j]
        item_offset = getattr(item, "offset", None)
        if isinstance(item_offset, dict) and not isinstance(item, ChangeRecord):
            return item_offset
    return tail


def _identifier(quoted: str) -> str:
    """``schema.table`` of ``"db"."schema"."table"``."""
    import re

    parts = [p.replace('""', '"') for p in re.findall(r'"((?:[^"]|"")*)"', quoted)]
    return ".".join(parts[-2:])
