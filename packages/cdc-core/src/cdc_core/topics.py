"""Topic naming strategies (``topic.naming.strategy``): data-change, schema-change, transaction and heartbeat topics.

As Debezium 2.7.4's ``AbstractTopicNamingStrategy`` and its two built-in subclasses:
``DefaultTopicNamingStrategy`` names a table's topic ``<prefix>.<database>.<table>`` (the id's
catalog; PostgreSQL's tables have none), ``SchemaTopicNamingStrategy`` ``<prefix>.<schema>.<table>``.
Each connector's documented default (Default for MySQL and MariaDB, Schema for PostgreSQL) gives
``<prefix>.<schema or database>.<table>``, which is what an unset property selects. Third-party
strategies register through the ``register_topic_naming_strategies`` hook.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from typing import Any, ClassVar

from cdc_core.config import Config
from cdc_core.config import common
from cdc_core.errors import ConfigError, PluginError
from cdc_core.relational import TableId

log = logging.getLogger("cdc.topics")

_INVALID = re.compile(r"[^A-Za-z0-9._-]")
#: Kafka's longest topic name (Debezium's ``MAX_NAME_LENGTH``).
MAX_NAME_LENGTH = 249


def sanitize(name: str) -> str:
    """Replace characters Kafka does not allow in topic names with ``_``, as Debezium does."""
    return _INVALID.sub("_", name)


def sanitized_topic_name(name: str) -> str:
    """``sanitizedTopicName``: invalid characters become ``_``, at most 249 characters, never ``.`` or ``..``."""
    out = sanitize(name)
    if len(out) > MAX_NAME_LENGTH:
        out = out[:MAX_NAME_LENGTH]
    elif out in (".", ".."):
        out = "_" * len(out)
    if out != name:
        log.warning("topic %r is not a valid topic name, replacing it with %r", name, out)
    return out


class TopicNamingStrategy:
    """The base of every strategy: the prefix, delimiter, transaction and heartbeat topics, and a name cache.

    A plugin subclasses it, sets ``name`` (and optionally ``class_names``) and implements
    ``data_change_topic``; it may override the other topics too. The constructor takes the
    connector's ``Config`` (so a strategy can read properties of its own).
    """

    name: ClassVar[str] = ""
    class_names: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: Config):
        self.config = config
        self.prefix: str = config.get(common.TOPIC_PREFIX)
        self.delimiter: str = config.get(common.TOPIC_DELIMITER)
        self.transaction: str = config.get(common.TOPIC_TRANSACTION)
        self.heartbeat_prefix: str = config.get(common.TOPIC_HEARTBEAT_PREFIX)
        self._cache: OrderedDict[TableId, str] = OrderedDict()
        self._cache_size: int = config.get(common.TOPIC_CACHE_SIZE)

    def join(self, parts: list[str | None]) -> str:
        """Debezium's ``mkString``: the non-blank parts joined by ``topic.delimiter``."""
        return self.delimiter.join(p for p in parts if p is not None and p.strip())

    def data_change_topic(self, table: TableId) -> str:  # pragma: no cover - abstract
        """The topic of a table's change events (before the cache)."""
        raise NotImplementedError

    def data_topic(self, table: TableId) -> str:
        """The topic of a table's change events, kept in an LRU cache of ``topic.cache.size`` names."""
        found = self._cache.get(table)
        if found is None:
            found = self._cache[table] = self.data_change_topic(table)
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(table)
        return found

    def record_schema_prefix(self, table: TableId) -> str:
        """The prefix of the table's Key/Value/Envelope schema names: its topic name.

        As 2.7.4's ``TableSchemaBuilder``, which takes ``dataChangeTopic(id)``: a table ``"My Table"``
        has the schemas ``<prefix>.public.My_Table.Key``, ``...Value``, ``...Envelope``.
        """
        return self.data_topic(table)

    def schema_change_topic(self) -> str:
        """The topic of schema change events: ``<topic.prefix>``."""
        return self.prefix

    def transaction_topic(self) -> str:
        """The topic of transaction metadata events: ``<topic.prefix>.<topic.transaction>``."""
        return sanitize(self.delimiter.join([self.prefix, self.transaction]))

    def heartbeat_topic(self) -> str:
        """The topic of heartbeats: ``<topic.heartbeat.prefix>.<topic.prefix>``."""
        return sanitize(self.delimiter.join([self.heartbeat_prefix, self.prefix]))


class DefaultTopicNamingStrategy(TopicNamingStrategy):
    """``io.debezium.schema.DefaultTopicNamingStrategy``: ``<prefix>.<database>.<table>`` (the id's catalog)."""

    name = "default"
    class_names = ("io.debezium.schema.DefaultTopicNamingStrategy",)

    def data_change_topic(self, table: TableId) -> str:
        """``<prefix>.<catalog>.<table>``, blank parts left out."""
        return sanitized_topic_name(self.join([self.prefix, table.catalog, table.table]))


class SchemaTopicNamingStrategy(TopicNamingStrategy):
    """``io.debezium.schema.SchemaTopicNamingStrategy``: ``<prefix>.<schema>.<table>``."""

    name = "schema"
    class_names = ("io.debezium.schema.SchemaTopicNamingStrategy",)

    def data_change_topic(self, table: TableId) -> str:
        """``<prefix>.<schema>.<table>``, blank parts left out."""
        return sanitized_topic_name(self.join([self.prefix, table.schema, table.table]))


class ConnectorDefaultTopicNamingStrategy(TopicNamingStrategy):
    """What an unset ``topic.naming.strategy`` selects: each connector's documented default.

    MySQL and MariaDB default to DefaultTopicNamingStrategy and their tables have a database but
    no schema; PostgreSQL defaults to SchemaTopicNamingStrategy and its tables have a schema but
    no catalog. So: ``<prefix>.<schema or database>.<table>``.
    """

    name = "connector-default"

    def data_change_topic(self, table: TableId) -> str:
        """``<prefix>.<schema or catalog>.<table>``."""
        parent = table.schema if table.schema is not None else table.catalog
        return sanitized_topic_name(self.join([self.prefix, parent, table.table]))


def topic_naming_strategy(config: Config, plugins: Any = None) -> TopicNamingStrategy:
    """The strategy ``topic.naming.strategy`` names (a plugin's name or class name); ConfigError if none has it."""
    name = config.get(common.TOPIC_NAMING_STRATEGY)
    if name in (None, ""):
        return ConnectorDefaultTopicNamingStrategy(config)
    if plugins is None:
        from cdc_core.plugins import registry

        plugins = registry()
    try:
        cls = plugins.get("topic naming strategy", str(name).strip())
    except PluginError as e:
        raise ConfigError([f"{common.TOPIC_NAMING_STRATEGY.name}: {e}"]) from None
    return cls(config)
