"""The YugabyteDB connector: the PostgreSQL connector with YugabyteDB's names, yboutput, slots and nodes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from psycopg import pq

from cdc_core.config import Config, Fields
from cdc_core.errors import ConfigError, ConnectorError, RetriableError
from cdc_core.events import Checkpoint, RawChange
from cdc_core.schema import Schema
from cdc_core.spi.connector import ConnectorContext
from cdc_postgres.connector import PostgresConnector
from cdc_postgres.replica_identity import apply_autoset
from cdc_postgres.replication import SlotCreated, parse_lsn, quote_ident

from cdc_yugabyte import config as ybc
from cdc_yugabyte.autoset import parse_autoset
from cdc_yugabyte.plugin import CONNECTOR as PLUGIN
from cdc_yugabyte.position import YugabyteLogPosition
from cdc_yugabyte.source import CONNECTOR, SOURCE_SCHEMA
from cdc_yugabyte.streaming import YbOutputStreamReader, YbStreamReader
from cdc_yugabyte.yboutput import wrapped_table


class YugabyteDBConnector(PostgresConnector):
    """YugabyteDB's logical-replication connector (Debezium 2.5 based), on the PostgreSQL one."""

    name: ClassVar[str] = PLUGIN.name
    #: The chapter's MBeans stay PostgreSQL's: ``debezium.postgres:type=connector-metrics,...``.
    metrics_plugin: ClassVar[str] = "postgres"
    class_names: ClassVar[tuple[str, ...]] = PLUGIN.class_names
    fields: ClassVar[Fields] = ybc.FIELDS
    source_schema: ClassVar[Schema] = SOURCE_SCHEMA
    log_position: ClassVar[type] = YugabyteLogPosition  # cdc_core.spi.position (PostgreSQL's is inherited otherwise)
    #: No heartbeat properties in the chapter: Debezium's own default (off) rather than the PostgreSQL connector's.
    defaults: ClassVar[dict[str, Any]] = {"database.port": ybc.PORT.default, "plugin.name": ybc.PLUGIN_NAME.default}

    def __init__(self, config: Config, context: ConnectorContext):
        self.yb_config = config
        self.plugin = config.get(ybc.PLUGIN_NAME)
        self.lsn_type = config.get(ybc.SLOT_LSN_TYPE).upper()  # SEQUENCE or HYBRID_TIME, as YugabyteDB spells them
        if config.get(ybc.SNAPSHOT_MODE) == "custom" and not config.get(ybc.SNAPSHOT_CUSTOM_CLASS):
            raise ConfigError([f"{ybc.SNAPSHOT_CUSTOM_CLASS.name}: is required with snapshot.mode=custom (the name "
                               "of a cdc snapshotter plugin)"])
        super().__init__(ybc.for_postgres(config), context)
        self.stream_reader = YbOutputStreamReader if self.yboutput else YbStreamReader
        #: Whether the server is YugabyteDB (else a PostgreSQL stand-in); known once started.
        self.is_yugabyte = False

    @property
    def yboutput(self) -> bool:
        """True where events take yboutput's shape (cell-wrapped columns)."""
        return self.plugin == "yboutput"

    def slot_plugin(self) -> str:
        """The output plug-in the slot is created with: ``plugin.name``."""
        return self.plugin

    # -- SPI ---------------------------------------------------------------------------------

    def validate(self) -> list[str]:
        """Properties the chapter lacks whose effect cannot be had on YugabyteDB."""
        return ybc.absent_property_problems(self.yb_config) + self._cell_problems() + super().validate()

    def _cell_problems(self) -> list[str]:
        """Column masks and custom converters act on a column's value; under yboutput they would meet the cell.

        The core skips a mask on a non-string field, so a masked column would go out in clear: refused.
        """
        if not self.yboutput:
            return []
        out = []
        for name in self.yb_config:
            if name.startswith(("column.mask.", "column.truncate.")) or name == "converters":
                out.append(f"{name}: not supported with plugin.name=yboutput (it would act on the {{value, set}} "
                           "cell, not the value); use plugin.name=pgoutput")
        return out

    def start(self, offset: dict[str, Any] | None) -> None:
        """PostgreSQL's start, then YugabyteDB's rules: keyed tables only, CHANGE with yboutput, cells."""
        for name in ybc.absent_property_warnings(self.yb_config):
            self.log.warning("%s is not a property of the YugabyteDB connector; cdc applies it as the PostgreSQL "
                             "connector does", name)
        super().start(offset)
        if self.yboutput and not self.is_yugabyte and self.slot_plugin() == "yboutput":
            raise ConnectorError(f"plugin.name=yboutput needs a YugabyteDB server, but {self.address} is PostgreSQL "
                                 "(no yboutput plug-in there): set plugin.name=pgoutput")
        autoset = self.yb_config.get(ybc.REPLICA_IDENTITY_AUTOSET)
        if autoset and self.is_yugabyte and self._slot_state()[0]:
            self.log.warning("replica.identity.autoset.values: slot %s exists, and a YugabyteDB slot keeps the replica "
                             "identities its tables had when it was created; a change reaches only a new slot",
                             self.slot)
        if autoset:
            apply_autoset(self._conn, {oid: t.id for oid, t in self._tables.items()}, self._catalog.replica_identity,
                          parse_autoset(autoset), self.log)
        keyless = sorted(str(t.id) for oid, t in self._tables.items()
                         if not t.primary_key or oid in self._catalog.unique_keyed)
        if keyless:
            raise ConnectorError(
                f"YugabyteDB captures only tables with a primary key; {', '.join(keyless)} "
                f"{'has' if len(keyless) == 1 else 'have'} none: add a primary key, or leave "
                f"{'it' if len(keyless) == 1 else 'them'} out with table.exclude.list")
        change = sorted(str(t.id) for oid, t in self._tables.items() if self._catalog.replica_identity.get(oid) == "c")
        if change and not self.yboutput:
            raise ConnectorError(f"{', '.join(change)} {'has' if len(change) == 1 else 'have'} REPLICA IDENTITY "
                                 "CHANGE, which YugabyteDB supports only with plugin.name=yboutput")
        if self.yboutput:
            self._tables = {oid: wrapped_table(t) for oid, t in self._tables.items()}

    def stream(self) -> Iterator[list[RawChange | Checkpoint]]:
        """PostgreSQL's stream; the snapshot's READs say ``YugabyteDB`` too (the reader's events already do)."""
        try:
            for batch in super().stream():
                for item in batch:
                    if isinstance(item, RawChange) and item.op == "r":
                        item.source["connector"] = CONNECTOR
                yield batch
        except RetriableError as e:
            raise self._node_error(e) from None

    def acknowledge(self, offset: dict[str, Any]) -> None:
        """As PostgreSQL; with HYBRID_TIME LSNs only at a transaction's end (every record carries its commit's)."""
        if self.lsn_type == "HYBRID_TIME" and offset.get("lsn_proc") is not None:
            return
        super().acknowledge(offset)

    # -- YugabyteDB's server ------------------------------------------------------------------

    def _connect(self) -> Any:
        """A connection to the first node of ``database.hostname`` that answers (libpq tries them in order)."""
        try:
            return super()._connect()
        except RetriableError as e:
            raise self._node_error(e) from None

    def _node_error(self, e: RetriableError) -> RetriableError:
        """The error in YugabyteDB's words: which nodes were tried (the engine retries; errors.max.retries)."""
        text = str(e).replace("PostgreSQL at", "YugabyteDB at", 1)
        if "," in self.yb_config.get(ybc.HOSTNAME):
            text += " (every node in database.hostname was tried; the next attempt tries them all again)"
        return type(e)(text)

    def _check_server(self) -> None:
        """YugabyteDB has no wal_level; its replication role is checked as PostgreSQL's."""
        assert self._conn is not None
        version = self._conn.execute("SELECT version()").fetchone()[0]
        self.is_yugabyte = "-YB-" in version
        if not self.is_yugabyte:
            self.log.info("the server is PostgreSQL, not YugabyteDB (a stand-in): %s", version.split(",")[0])
            super()._check_server()
            return
        user, can_replicate = self._conn.execute(
            "SELECT current_user, rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
        if not can_replicate:
            raise ConnectorError(f"user {user!r} on {self.address} lacks the REPLICATION privilege; grant it with "
                                 f'ALTER ROLE "{user}" WITH REPLICATION')

    def _slot_state(self) -> tuple[bool, bool]:
        """YugabyteDB's pg_replication_slots (PostgreSQL 11's columns) has no wal_status: no slot is ever "lost"."""
        if not self.is_yugabyte:
            return super()._slot_state()
        assert self._conn is not None
        row = self._conn.execute("SELECT active, database FROM pg_replication_slots WHERE slot_name = %s",
                                 (self.slot,)).fetchone()
        if row is None:
            return False, False
        if row[1] != self.db:
            raise ConnectorError(f"replication slot {self.slot!r} belongs to database {row[1]!r}, not {self.db!r}; "
                                 "use another slot.name (slot names are unique across a YugabyteDB cluster)")
        return True, bool(row[0])

    def _check_offset_not_ahead(self, offset: dict[str, Any]) -> None:
        """A YugabyteDB LSN counts within one slot, not WAL bytes: there is no server position to compare with."""
        if not self.is_yugabyte:
            super()._check_offset_not_ahead(offset)

    def _create_slot(self, export_snapshot: bool) -> SlotCreated:
        """``CREATE_REPLICATION_SLOT ... LOGICAL <plugin> ... <slot.lsn.type>`` on YugabyteDB; PostgreSQL's on a stand-in."""
        assert self._repl is not None
        if not self.is_yugabyte:
            if self.lsn_type != "SEQUENCE":
                self.log.warning("slot.lsn.type=%s is YugabyteDB's; the PostgreSQL server at %s has WAL LSNs only",
                                 self.lsn_type, self.address)
            return self._repl.create_slot(self.slot, self.slot_plugin(), export_snapshot=export_snapshot)
        command = create_slot_command(self.slot, self.slot_plugin(), export_snapshot, self.lsn_type)
        res = self._repl._command(command, pq.ExecStatus.TUPLES_OK)
        text = [(v.decode() if (v := res.get_value(0, i)) is not None else None) for i in range(res.nfields)]
        return SlotCreated(slot_name=text[0] or self.slot, consistent_point=parse_lsn(text[1]) if text[1] else 0,
                           snapshot_name=text[2], output_plugin=text[3] if len(text) > 3 else self.slot_plugin())

    def _stream_options(self) -> dict[str, str]:
        """YugabyteDB (PostgreSQL 11's protocol): pgoutput protocol 1 and the publication, nothing else."""
        if not self.is_yugabyte:
            return super()._stream_options()
        return {"proto_version": "1", "publication_names": f'"{self.publication}"'}


def create_slot_command(slot: str, plugin: str, export_snapshot: bool, lsn_type: str) -> str:
    """YugabyteDB's replication command for a new slot, with its LSN type (SEQUENCE or HYBRID_TIME)."""
    snapshot = "EXPORT_SNAPSHOT" if export_snapshot else "NOEXPORT_SNAPSHOT"
    # SEQUENCE is the server's default: left out, the command also suits 2024.1, which knows no LSN types.
    kind = "" if lsn_type == "SEQUENCE" else f" {lsn_type}"
    return f"CREATE_REPLICATION_SLOT {quote_ident(slot)} LOGICAL {quote_ident(plugin)} {snapshot}{kind}"
