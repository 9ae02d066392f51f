"""The kit's MariaDB fixture: the session's throwaway server, one database per test (plus any it creates)."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from kit.contract import Column, Table, Workdir, column_definition, sanitize_topic

_TYPES = {"int32": "INT", "int64": "BIGINT", "float64": "DOUBLE", "text": "LONGTEXT", "decimal": "DECIMAL(38,10)"}


class MariaDBFixture:
    """``ConnectorFixture`` for the MariaDB connector on ``EmbeddedMariaDB``."""

    name: ClassVar[str] = "mariadb"
    unavailable_value: ClassVar[str | None] = None  # binlog_row_image=FULL: every value is there
    has_history: ClassVar[bool] = True
    text_allows_nul: ClassVar[bool] = True
    decimal_max: ClassVar[str] = "9999999999999999999999999999.9999999999"
    text_defaults: ClassVar[bool] = True
    topic_names_database: ClassVar[bool] = False  # the database is the schema: <prefix>.<database>.<table>
    refuses_offsets_ahead: ClassVar[bool] = True
    read_ahead_unbounded: ClassVar[str | None] = None
    #: The data-driven scenarios (``kit.scenarios``): their files (a glob under tests/) and the run class.
    scenario_files: ClassVar[str] = "data/mariadb_scenarios/*.yaml"
    scenario_run: ClassVar[str] = "kit.scenarios_mariadb:MariaDBScenarioRun"

    def __init__(self, server: Any, database: str):
        self.server = server
        self.database = database
        self.default_schema = database
        self.databases = [database]  # everything the connector captures; dropped again by ``close``

    def connect(self) -> Any:
        """A PyMySQL connection, autocommit off."""
        return self.server.connect(self.database, autocommit=False)

    def quote(self, identifier: str) -> str:
        """A backquoted identifier."""
        return "`" + identifier.replace("`", "``") + "`"

    def sql_type(self, neutral: str) -> str:
        """The MariaDB type of a neutral type."""
        return _TYPES[neutral]

    def accepts_identifier(self, name: str, kind: str) -> bool:
        """MariaDB: at most 64 characters of the Basic Multilingual Plane, no NUL, no trailing space."""
        return (len(name) <= 64 and not name.endswith(" ") and "\x00" not in name
                and all(ord(ch) <= 0xFFFF for ch in name))

    def execute(self, statement: str) -> None:
        """Run one statement on the test database in autocommit mode."""
        self.server.execute(statement, database=self.database)

    def _qualified(self, table: Table) -> str:
        return f"{self.quote(table.schema or self.database)}.{self.quote(table.name)}"

    def create_schema(self, schema: str) -> None:
        """``CREATE DATABASE``, captured from then on."""
        self.execute(f"CREATE DATABASE {self.quote(schema)}")
        self.databases.append(schema)

    def create_table(self, table: Table) -> None:
        """``CREATE TABLE`` (the binlog holds full row images)."""
        columns = [column_definition(self, c) for c in table.columns]
        key = ", ".join(self.quote(k) for k in table.key)
        self.execute(f"CREATE TABLE {self._qualified(table)} ({', '.join(columns)}, PRIMARY KEY ({key}))")

    def add_column(self, table: Table, column: Column) -> Table:
        """``ALTER TABLE ... ADD COLUMN``."""
        self.execute(f"ALTER TABLE {self._qualified(table)} ADD COLUMN {column_definition(self, column)}")
        return Table(table.name, table.columns + (column,), table.key, table.schema)

    def properties(self, workdir: Workdir, **source: Any) -> dict[str, Any]:
        """The MariaDB connector on the test's databases, the file sink, file offsets and history."""
        props: dict[str, Any] = {
            "debezium.sink.type": "file",
            "debezium.sink.file.dir": str(workdir.events),
            "debezium.source.connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
            "debezium.source.database.hostname": self.server.host,
            "debezium.source.database.port": self.server.port,
            "debezium.source.database.user": self.server.user,
            "debezium.source.database.password": self.server.password,
            "debezium.source.database.server.id": 5500,
            "debezium.source.database.include.list": ",".join(re.escape(db) for db in self.databases),
            "debezium.source.topic.prefix": "dbserver1",
            "debezium.source.offset.storage.file.filename": str(workdir.offsets),
            "debezium.source.offset.flush.interval.ms": 0,
            "debezium.source.schema.history.internal.file.filename": str(workdir.history),
            "debezium.source.poll.interval.ms": 100,
        }
        props.update({f"debezium.source.{k}": v for k, v in source.items()})
        return props

    def topic(self, table: Table, prefix: str = "dbserver1") -> str:
        """``<prefix>.<database>.<table>``, sanitized."""
        return sanitize_topic(f"{prefix}.{table.schema or self.database}.{table.name}")

    def schema_of(self, table: Table) -> str:
        """``source.db``."""
        return table.schema or self.database

    def source_position(self, source: dict[str, Any]) -> tuple[Any, ...]:
        """``source.file`` and ``source.pos``."""
        return (source["file"], source["pos"])

    def position(self, offset: dict[str, Any]) -> tuple[Any, ...]:
        """A MariaDB offset: binlog file, position, events and rows to skip."""
        return (offset.get("file", ""), offset.get("pos", 0), offset.get("event", 0), offset.get("row", 0))

    def resumes_before(self, offset: dict[str, Any], source: dict[str, Any]) -> bool:
        """The offset's restart position (a transaction's start) lies at or before the event's binlog position."""
        return (offset.get("file", ""), offset.get("pos", 0)) <= (source["file"], source["pos"])

    def offsets_ahead(self, offset: dict[str, Any]) -> dict[str, tuple[dict[str, Any], str]]:
        """A position 1 GiB past the binlog's end and a binlog file 1000 files later (shown as ``file:pos``;
        without ``gtids``, which would position the restart, as Debezium does), and a GTID set 1000
        transactions past the server's (shown as ``GTID set ...``)."""
        by_file = {k: v for k, v in offset.items() if k != "gtids"}
        base, number = offset["file"].rsplit(".", 1)
        later = {**by_file, "file": f"{base}.{int(number) + 1000:0{len(number)}d}"}
        further = {**by_file, "pos": offset["pos"] + (1 << 30)}
        domain, server, seq = offset["gtids"].split("-")
        gtids = f"{domain}-{server}-{int(seq) + 1000}"
        return {"position": (further, f"{further['file']}:{further['pos']}"),
                "file": (later, f"{later['file']}:{later['pos']}"),
                "gtids": ({**offset, "gtids": gtids}, f"GTID set {gtids}")}

    def confirmed_position(self) -> Any:
        """Nothing: a binlog reader confirms nothing to the server."""
        return None

    def cut_connections(self) -> None:
        """Kill the connector's binlog dump sessions (what a dropped connection ends)."""
        with self.server.connect() as conn, conn.cursor() as cur:
            cur.execute("SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%%'")
            for (pid,) in cur.fetchall():
                try:
                    cur.execute(f"KILL {int(pid)}")
                except Exception:  # noqa: BLE001 - it ended meanwhile
                    pass

    def close(self) -> None:
        """Drop the databases the test created besides its own."""
        for db in self.databases[1:]:
            if self.server.running:
                self.server.execute(f"DROP DATABASE IF EXISTS {self.quote(db)}")
