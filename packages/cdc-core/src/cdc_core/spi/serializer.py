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

    def __init__(self, key_schemas_enable: bool = True, value_schemas_enable: bool = True, *,
                 key_replace_null_with_default: bool = True, value_replace_null_with_default: bool = True) -> None:
        """``*_schemas_enable`` and ``*_replace_null_with_default`` are JsonConverter's ``schemas.enable`` and
        ``replace.null.with.default`` per side; the latter two are passed only when set to false."""

    def serialize(self, records: list[ChangeRecord]) -> list[SinkRecord]:
        """Serialize a batch; a None key or value becomes None (JSON null)."""
