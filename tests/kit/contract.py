"""The connector fixture contract: what the kit's scenarios need to know about a connector and its server."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

#: The neutral column types a fixture maps to its own SQL types.
NEUTRAL_TYPES = ("int32", "int64", "float64", "text", "decimal")

_INVALID_TOPIC_CHARS = re.compile(r"[^A-Za-z0-9._-]")


def sanitize_topic(name: str) -> str:
    """Debezium's topic name rule (``TopicNameSanitizer``): every character outside ``[A-Za-z0-9._-]`` becomes ``_``."""
    return _INVALID_TOPIC_CHARS.sub("_", name)


@dataclass(frozen=True)
class Column:
    """A column in neutral terms: a name and one of ``NEUTRAL_TYPES`` (``decimal`` is NUMERIC(38,10))."""

    name: str
    type: str
    nullable: bool = True
    #: A SQL literal both servers read alike (``'none'``, ``7``), written as ``DEFAULT <literal>``.
    default: str | None = None

    def __post_init__(self) -> None:
        assert self.type in NEUTRAL_TYPES, f"unknown neutral type {self.type!r}"


@dataclass(frozen=True)
class Table:
    """A table in neutral terms; ``schema`` None is the fixture's default schema (``public``, the test database)."""

    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...] = ("id",)
    schema: str | None = None

    def column_names(self) -> list[str]:
        """The column names in order."""
        return [c.name for c in self.columns]


@dataclass
class Workdir:
    """Where one ``cdc run`` keeps its configuration, sink output and state files."""

    root: Path
    config: Path = field(init=False)
    events: Path = field(init=False)
    offsets: Path = field(init=False)
    history: Path = field(init=False)

    def __post_init__(self) -> None:
        self.config = self.root / "app.properties"
        self.events = self.root / "events"
        self.offsets = self.root / "offsets.json"
        self.history = self.root / "history.jsonl"


def column_definition(fx: ConnectorFixture, column: Column) -> str:
    """A column's definition in ``fx``'s dialect: quoted name, type, NOT NULL, DEFAULT."""
    return (f"{fx.quote(column.name)} {fx.sql_type(column.type)}{'' if column.nullable else ' NOT NULL'}"
            + ("" if column.default is None else f" DEFAULT {column.default}"))


@runtime_checkable
class ConnectorFixture(Protocol):
    """How the kit drives one connector: its server, its SQL dialect, its properties, its offsets.

    One small class per connector implements this (``kit/postgres.py``, ``kit/mariadb.py``); adding
    it to ``kit.FIXTURES`` runs every kit scenario against that connector.
    """

    #: The pytest id ("postgres", "mariadb").
    name: ClassVar[str]
    #: The value Debezium puts in a column it could not read (PostgreSQL's unchanged TOAST), else None.
    unavailable_value: ClassVar[str | None]
    #: Whether the connector keeps a schema history file (``Workdir.history``).
    has_history: ClassVar[bool]
    #: Whether text columns may hold NUL characters.
    text_allows_nul: ClassVar[bool]
    #: The largest value of the neutral ``decimal`` type as the server holds it (NUMERIC(38,10) where it can).
    decimal_max: ClassVar[str]
    #: Whether a text column's ``DEFAULT`` reaches the event schema (and so JsonConverter's null replacement).
    text_defaults: ClassVar[bool]
    #: Whether data topics name the database before the schema (``<prefix>.<database>.<schema>.<table>``).
    topic_names_database: ClassVar[bool]
    #: Whether a start from an offset ahead of the server's log is refused (else it goes on with a warning quoting
    #: the stored position, as the connector's Debezium does; ``test_kit_future_offsets``).
    refuses_offsets_ahead: ClassVar[bool]
    #: Why the connector reads ahead of a stalled sink by more than the queue holds (the slow-sink scenario is
    #: skipped, naming it), or None when the queue's bound holds its memory (``test_kit_sink_failures``).
    read_ahead_unbounded: ClassVar[str | None]
    #: The data-driven scenarios (``kit.scenarios``): a glob of their files under tests/, and the
    #: ``module:Class`` of the connector's ``ScenarioRun`` (its configuration, topic names, own steps).
    scenario_files: ClassVar[str]
    scenario_run: ClassVar[str]
    #: The default schema's name as topics carry it.
    default_schema: str
    #: The throwaway server (``ThrowawayServer``: ``restart()``, ``kill()``, ``start()``).
    server: Any

    def connect(self) -> Any:
        """A DB-API connection to the test database, autocommit off, ``%s`` placeholders."""

    def execute(self, statement: str) -> None:
        """Run one statement on the test database in autocommit mode."""

    def quote(self, identifier: str) -> str:
        """``identifier`` quoted for SQL."""

    def sql_type(self, neutral: str) -> str:
        """The server's SQL type for a neutral type."""

    def accepts_identifier(self, name: str, kind: str) -> bool:
        """Whether the server can name a ``schema``, ``table`` or ``column`` so."""

    def create_schema(self, schema: str) -> None:
        """Create a schema (a database on MariaDB) that the connector captures."""

    def create_table(self, table: Table) -> None:
        """Create ``table`` with full before images of updates and deletes."""

    def add_column(self, table: Table, column: Column) -> Table:
        """``ALTER TABLE ... ADD`` ``column``; return the table's new description."""

    def properties(self, workdir: Workdir, **source: Any) -> dict[str, Any]:
        """A Debezium Server configuration: this connector on the test database, the file sink, file offsets."""

    def topic(self, table: Table, prefix: str = "dbserver1") -> str:
        """The data topic of ``table`` as the spec names it."""

    def schema_of(self, table: Table) -> str:
        """The schema name ``table``'s events carry in ``source`` (``schema`` or ``db``)."""

    def source_position(self, source: dict[str, Any]) -> tuple[Any, ...]:
        """The log position an event's ``source`` block names (every read of one snapshot names the same)."""

    def position(self, offset: dict[str, Any]) -> tuple[Any, ...]:
        """A comparable position from one committed offset (what this connector's offsets look like)."""

    def resumes_before(self, offset: dict[str, Any], source: dict[str, Any]) -> bool:
        """Whether a restart from the committed ``offset`` reads the event ``source`` names again (offset before it)."""

    def offsets_ahead(self, offset: dict[str, Any]) -> dict[str, tuple[dict[str, Any], str]]:
        """Ways to put ``offset`` ahead of anything the server has written: name -> (offset, position as errors show it)."""

    def confirmed_position(self) -> Any:
        """What the server keeps as confirmed by the connector (PostgreSQL's slot), or None if it keeps nothing."""

    def cut_connections(self) -> None:
        """End every server session of the connector (not of the test's own writers)."""

