"""The sink contract: where serialized records go."""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple, Protocol, runtime_checkable

from cdc_core.config import Config


class SinkRecord(NamedTuple):
    """A serialized record: its topic, key and value as the converter wrote them (None = JSON null)."""

    topic: str
    key: bytes | None
    value: bytes | None
    headers: dict[str, Any]


@runtime_checkable
class Sink(Protocol):
    """A destination for record batches; ``write`` returning means the batch is durably acknowledged."""

    #: The ``debezium.sink.type`` value that selects this sink.
    name: ClassVar[str]

    def __init__(self, config: Config) -> None:
        """``config`` holds the ``debezium.sink.<name>.*`` properties, prefix removed."""

    def write(self, batch: list[SinkRecord]) -> None:
        """Write a batch; return only when it is acknowledged; raise ``SinkError`` if it is not."""

    def close(self) -> None:
        """Flush and release resources."""

    # Optional: ``stop()``, called (from any thread) when the engine is asked to stop, cuts a retry wait
    # short so that a broker that is down does not hold up a shutdown; the batch then fails unacknowledged.
