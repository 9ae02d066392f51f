"""Topic naming: ``<topic.prefix>.<schema>.<table>`` and the schema names derived from it."""

from __future__ import annotations

import re

from cdc_core.config import Config
from cdc_core.config import common
from cdc_core.relational import TableId

_INVALID = re.compile(r"[^A-Za-z0-9._-]")


def sanitize(name: str) -> str:
    """Replace characters Kafka does not allow in topic names with ``_``, as Debezium does."""
    return _INVALID.sub("_", name)


class DefaultTopicNamingStrategy:
    """Debezium's default strategy: the prefix, then the table id parts, joined by ``topic.delimiter``."""

    name = "default"

    def __init__(self, config: Config):
        self.prefix = config.get(common.TOPIC_PREFIX)
        self.delimiter = config.get(common.TOPIC_DELIMITER)
        self.transaction = config.get(common.TOPIC_TRANSACTION)
        self.heartbeat_prefix = config.get(common.TOPIC_HEARTBEAT_PREFIX)

    def data_topic(self, table: TableId) -> str:
        """The topic of a table's change events."""
        parts = [self.prefix, table.schema if table.schema is not None else table.catalog, table.table]
        return sanitize(self.delimiter.join(p for p in parts if p is not None))

    def record_schema_prefix(self, table: TableId) -> str:
        """The prefix of the table's Key/Value/Envelope schema names: its topic name, sanitized.

        As 2.7.4's ``TopicNamingStrategy.recordSchemaPrefix``, which returns ``dataChangeTopic(id)``:
        a table ``"My Table"`` has the schemas ``<prefix>.public.My_Table.Key``, ``...Value``, ``...Envelope``.
        """
        return self.data_topic(table)

    def transaction_topic(self) -> str:
        """The topic of transaction metadata events: ``<topic.prefix>.<topic.transaction>``."""
        return sanitize(f"{self.prefix}{self.delimiter}{self.transaction}")

    def heartbeat_topic(self) -> str:
        """The topic of heartbeats: ``<topic.heartbeat.prefix>.<topic.prefix>``."""
        return sanitize(f"{self.heartbeat_prefix}{self.delimiter}{self.prefix}")
