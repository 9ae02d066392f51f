"""A real in-memory connector for the engine tests: it plays a script of RawChange batches."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from cdc_core.config import Config, ConfigField, Fields
from cdc_core.config import common
from cdc_core.errors import RetriableError
from cdc_core.events import Checkpoint, RawChange
from cdc_core.hookspecs import hookimpl
from cdc_core.plugins import PluginRegistry
from cdc_core.relational import Column, Table, TableId
from cdc_core.schema import INT32, INT64, OPTIONAL_STRING, STRING, struct
from cdc_core.spi.connector import ConnectorContext

#: The ``source`` block of the memory connector's events.
SOURCE_SCHEMA = struct(
    "io.debezium.connector.memory.Source", [("name", STRING), ("pos", INT64)]
)

#: Which script (a key of ``SOURCES``) a MemoryConnector plays.
SCRIPT = ConfigField("memory.script", "string", required=True, doc="Key of the MemoryScript to play.")

#: The table every helper below builds changes for: public.customers (id int PK, name, email).
CUSTOMERS = Table(
    TableId(None, "public", "customers"),
    [
        Column("id", "int4", INT32, int, position=1, optional=False),
        Column("name", "text", OPTIONAL_STRING, str, position=2),
        Column("email", "text", STRING, str, position=3, optional=False),
    ],
    ["id"],
)


def source(pos: int) -> dict[str, Any]:
    """The ``source`` payload of the change at ``pos``."""
    return {"name": "test", "pos": pos}


def offset(pos: int) -> dict[str, Any]:
    """The offset of the change at ``pos``."""
    return {"pos": pos}


def insert(pos: int, id_: int | None = None, name: str = "n", email: str = "e") -> RawChange:
    """An insert into customers at log position ``pos`` (raw values in PostgreSQL text form)."""
    row = (str(pos if id_ is None else id_), name, email)
    return RawChange(CUSTOMERS, "c", None, row, source(pos), offset(pos))


@dataclass
class MemoryScript:
    """What a MemoryConnector yields, and everything the engine did to it.

    ``batches`` are yielded in order; a batch whose changes all lie at or before the start
    offset's ``pos`` is skipped (so a restart resumes). ``fail_at`` (a batch index) raises
    ``error`` (``RetriableError`` by default) instead of yielding that batch, ``failures`` times in all.
    ``keep_streaming`` makes ``stream`` wait for ``stop()`` after the last batch, like a
    connector following a live log.
    """

    batches: list[list[RawChange | Checkpoint]]
    fail_at: int | None = None
    failures: int = 1
    error: type[Exception] = RetriableError
    keep_streaming: bool = False
    starts: list[dict[str, Any] | None] = field(default_factory=list)
    acknowledged: list[dict[str, Any]] = field(default_factory=list)
    yielded: list[int] = field(default_factory=list)
    stops: int = 0
    closes: int = 0
    streaming: threading.Event = field(default_factory=threading.Event)
    #: When set, ``partition()`` signals ``in_partition`` and waits for ``partition_gate`` (to pause
    #: the engine between creating a connector and starting it).
    partition_gate: threading.Event | None = None
    in_partition: threading.Event = field(default_factory=threading.Event)
    connectors: list[MemoryConnector] = field(default_factory=list)


SOURCES: dict[str, MemoryScript] = {}
_ids = itertools.count()


def add_script(script: MemoryScript) -> str:
    """Make ``script`` playable; returns the ``memory.script`` value that names it."""
    key = f"script-{next(_ids)}"
    SOURCES[key] = script
    return key


def _last_pos(batch: list[RawChange | Checkpoint]) -> int:
    return max(item.offset["pos"] for item in batch)


class MemoryConnector:
    """A connector over a MemoryScript: no I/O, stoppable, recording start offsets and acknowledgements."""

    name: ClassVar[str] = "memory"
    class_names: ClassVar[tuple[str, ...]] = ("io.example.cdc.MemoryConnector",)
    fields: ClassVar[Fields] = Fields([SCRIPT])
    source_schema = SOURCE_SCHEMA

    def __init__(self, config: Config, context: ConnectorContext):
        self.config = config
        self.log = context.log
        self.server = config.get(common.TOPIC_PREFIX)
        self.script_key = config.get(SCRIPT)
        self._stop = threading.Event()
        self._start: dict[str, Any] | None = None
        if self.script_key in SOURCES:
            self.script.connectors.append(self)

    @property
    def script(self) -> MemoryScript:
        """The script this connector plays."""
        return SOURCES[self.script_key]

    def validate(self) -> list[str]:
        """The script must exist."""
        if self.script_key not in SOURCES:
            return [f"{SCRIPT.name}: no script called {self.script_key!r}"]
        return []

    def partition(self) -> dict[str, Any]:
        """Offsets live under ``{"server": topic.prefix}``, as Debezium's relational connectors do."""
        gate = self.script.partition_gate
        if gate is not None:
            self.script.in_partition.set()
            gate.wait(10)
        return {"server": self.server}

    def start(self, offset: dict[str, Any] | None) -> None:
        """Record the start offset; later batches resume after it."""
        self.script.starts.append(None if offset is None else dict(offset))
        self._start = offset

    def stream(self) -> Iterator[list[RawChange | Checkpoint]]:
        """Yield the script's batches after the start offset, failing once where the script says."""
        script = self.script
        after = -1 if self._start is None else self._start["pos"]
        script.streaming.set()
        for index, batch in enumerate(script.batches):
            if self._stop.is_set():
                return
            if _last_pos(batch) <= after:
                continue
            if index == script.fail_at and script.failures > 0:
                script.failures -= 1
                raise script.error(f"memory connector: simulated outage before batch {index}")
            script.yielded.append(index)
            yield list(batch)
        while script.keep_streaming and not self._stop.wait(0.005):
            yield []

    def acknowledge(self, offset: dict[str, Any]) -> None:
        """Record an acknowledgement (called from the engine's thread)."""
        self.script.acknowledged.append(dict(offset))

    def stop(self) -> None:
        """End ``stream`` soon."""
        self.script.stops += 1
        self._stop.set()

    def close(self) -> None:
        """Count the close."""
        self.script.closes += 1


class MemoryPlugin:
    """A plugin object registering the memory connector through the ``register_connectors`` hook."""

    @hookimpl
    def register_connectors(self) -> list[type]:
        """The memory connector."""
        return [MemoryConnector]


def memory_registry() -> PluginRegistry:
    """A plugin registry holding the built-ins and the memory connector (no other entry points)."""
    plugins = PluginRegistry(load_entry_points=False)
    plugins.register(MemoryPlugin(), name="memory")
    return plugins
