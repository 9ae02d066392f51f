"""The connector contract: what a database plugin gives the core."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from cdc_core.config import Config, Fields
from cdc_core.events import RawChange
from cdc_core.logs import ConnectorLogger
from cdc_core.schema import Schema


@dataclass
class ConnectorContext:
    """What the engine hands a connector: its logger and the stores it may need."""

    log: ConnectorLogger
    history: Any = None
    #: The plugin registry, for the snapshot SPIs and other pluggable parts a connector looks up.
    plugins: Any = None
    #: ``cdc_core.metrics.ConnectorMetrics``: report snapshot progress and the streaming connection here.
    metrics: Any = None
    extras: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Connector(Protocol):
    """A database plugin: it connects, snapshots and streams, and yields plain ``RawChange`` batches.

    Lifecycle per attempt: ``__init__`` (no I/O) -> ``start(offset)`` -> iterate ``stream()`` ->
    ``close()``. ``stop()`` and ``acknowledge()`` are called from another thread while
    ``stream()`` runs. A retriable failure (database unreachable) raises
    ``cdc_core.errors.RetriableError``; the engine then drains, waits and starts a new attempt
    from the last acknowledged offset.

    Optional class attribute ``offset_shape`` (``cdc_core.spi.offsets.OffsetShape``): what a stored
    offset looks like; the engine checks the stored offset against it before ``start``.

    Several partitions (optional; SQL Server's ``database.names=db1,db2``): a connector instance with
    a ``partitions()`` method (the list of its partitions) is started by ``start_partitions([(partition,
    stored offset or None), ...])`` instead of ``start``, and every batch of its ``stream()`` is a
    ``cdc_core.events.PartitionBatch`` naming its partition; the engine then builds each partition's
    events with their own builder and commits each partition's last acknowledged offset. Several tasks
    (``tasks.max``) are the connector's own business behind this seam: SQL Server runs a thread per task
    (``cdc_sqlserver.tasks``) and merges their ``PartitionBatch``es in ``stream()``.

    Optional class attribute ``max_tasks_refusal`` (str): ``tasks.max`` > 1 is refused at start with this
    message (Debezium's ``taskConfigs`` throwing it; MySQL, MariaDB); without it a connector of one task
    just runs one.
    """

    #: Short name used in ``connector.class`` (e.g. ``postgres``).
    name: ClassVar[str]
    #: Debezium class names this connector answers to.
    class_names: ClassVar[tuple[str, ...]]
    #: The connector's own properties (the common ones are added by the core).
    fields: ClassVar[Fields]
    #: The Connect schema of this connector's ``source`` block.
    source_schema: ClassVar[Schema]
    #: Defaults this connector gives shared properties, applied where the user set none (optional).
    defaults: ClassVar[dict[str, Any]]

    def __init__(self, config: Config, context: ConnectorContext) -> None: ...

    def validate(self) -> list[str]:
        """Problems with the configuration beyond single properties (no I/O); one line each."""

    def partition(self) -> dict[str, Any]:
        """The offset partition this connector's offsets are stored under (e.g. ``{"server": prefix}``)."""

    def start(self, offset: dict[str, Any] | None) -> None:
        """Connect and check prerequisites; ``offset`` is the last acknowledged one, or None."""

    def stream(self) -> Iterator[list[RawChange]]:
        """Yield batches of changes (snapshot first, then the log) until ``stop`` or the end of an initial-only run."""

    def acknowledge(self, offset: dict[str, Any]) -> None:
        """Everything up to ``offset`` is durably stored by the sink; the source may release it."""

    def stop(self) -> None:
        """Ask ``stream`` to end soon (called from another thread)."""

    def close(self) -> None:
        """Release connections; called once after ``stream`` ends or fails."""
