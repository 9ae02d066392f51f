"""The serializer contract: turning records into the bytes a sink writes."""

from __future__ import annotations

from typing import ClassVar, Protocol, runtime_checkable

from cdc_core.events import ChangeRecord
from cdc_core.spi.sink import SinkRecord


@runtime_checkable
class Serializer(Protocol):
    """Serializes record batches for the sink (the converter of Kafka Connect)."""

    #: The format name (``debezium.format.value``), e.g. ``json``.
    name: ClassVar[str]

    def __init__(self, key_schemas_enable: bool = True, value_schemas_enable: bool = True) -> None: ...

    def serialize(self, records: list[ChangeRecord]) -> list[SinkRecord]:
        """Serialize a batch; a None key or value becomes None (JSON null)."""
