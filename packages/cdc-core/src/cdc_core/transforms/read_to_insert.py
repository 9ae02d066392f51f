"""``io.debezium.connector.mysql.transforms.ReadToInsertEvent``: snapshot reads (``op`` ``r``) become inserts (``c``)."""

from __future__ import annotations

from typing import ClassVar

from cdc_core.config import Config, Fields
from cdc_core.events import ChangeRecord
from cdc_core.transforms.options import options


class ReadToInsertEvent:
    """Sets ``op`` to ``c`` on change events whose ``op`` is ``r``; any other record passes unchanged.

    Documented in the MySQL chapter; as in Debezium 2.7.4 it works on any connector's envelope
    (it checks only that the value schema is a ``*.Envelope``), so MariaDB's and PostgreSQL's
    class names are not Debezium's but this one serves them too.
    """

    name: ClassVar[str] = "ReadToInsertEvent"
    class_names: ClassVar[tuple[str, ...]] = ("io.debezium.connector.mysql.transforms.ReadToInsertEvent",)
    fields: ClassVar[Fields] = Fields([])

    def __init__(self, config: Config):
        """Check that no option is given (there is none)."""
        options(config, self.fields)

    def apply(self, record: ChangeRecord) -> ChangeRecord:
        """The record, with ``op`` ``c`` where it was ``r``."""
        value, schema = record.value, record.value_schema
        if value is None or value.get("op") != "r" or schema is None or not (schema.name or "").endswith(".Envelope"):
            return record
        record.value = {**value, "op": "c"}
        return record
