"""``org.apache.kafka.connect.transforms.Filter``: drops every record it is applied to (use it with a predicate).

Not Debezium's expression-based ``io.debezium.transforms.Filter``: Kafka's has no options and drops
whatever its predicate (``transforms.<alias>.predicate``, ``negate``) selects.
"""

from __future__ import annotations

from typing import ClassVar

from cdc_core.config import Config, Fields
from cdc_core.events import ChangeRecord
from cdc_core.transforms.options import options
from cdc_core.transforms.sides import KAFKA


class KafkaFilter:
    """Drops the record (the chain keeps its offset for the commit)."""

    name: ClassVar[str] = "KafkaFilter"
    class_names: ClassVar[tuple[str, ...]] = (f"{KAFKA}Filter",)
    fields: ClassVar[Fields] = Fields([])

    def __init__(self, config: Config):
        """Check that no option is given (there is none)."""
        options(config, self.fields)

    def apply(self, record: ChangeRecord) -> None:
        """None: the record is dropped."""
        return None
