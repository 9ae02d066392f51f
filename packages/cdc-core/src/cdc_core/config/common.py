"""The properties every connector shares, with Debezium's names, defaults and enum values."""

from __future__ import annotations

from cdc_core.config.fields import ConfigField as F
from cdc_core.config.fields import Fields
from cdc_core.snapshot.modes import CONFIGURATION_BASED_FIELDS


def _topic_prefix_ok(value: str) -> str | None:
    import re

    if not re.fullmatch(r"[A-Za-z0-9._-]+", value):
        return f"{value!r} may contain only letters, digits, '.', '_' and '-'"
    return None


NAME = F("name", "string", doc="The connector's name, used in logs and metrics.")
CONNECTOR_CLASS = F("connector.class", "string", required=True, doc="Debezium class name or short name of the connector.")
TOPIC_PREFIX = F("topic.prefix", "string", required=True, validator=_topic_prefix_ok, doc="The namespace of every topic.")
TOPIC_DELIMITER = F("topic.delimiter", "string", ".", validator=_topic_prefix_ok, doc="Separator between topic name parts.")
SCHEMA_INCLUDE = F("schema.include.list", "regex-list", doc="Schemas to capture (anchored regexes).")
SCHEMA_EXCLUDE = F("schema.exclude.list", "regex-list", doc="Schemas not to capture.")
TABLE_INCLUDE = F("table.include.list", "regex-list", doc="Tables to capture, as schema.table regexes.")
TABLE_EXCLUDE = F("table.exclude.list", "regex-list", doc="Tables not to capture.")
COLUMN_INCLUDE = F("column.include.list", "regex-list", doc="Columns to emit, as schema.table.column regexes.")
COLUMN_EXCLUDE = F("column.exclude.list", "regex-list", doc="Columns to leave out of events.")
TOMBSTONES_ON_DELETE = F("tombstones.on.delete", "boolean", True, doc="Follow each delete with a tombstone.")
MAX_QUEUE_SIZE = F("max.queue.size", "int", 8192, minimum=1, doc="Capacity of the queue between connector and sink.")
MAX_BATCH_SIZE = F("max.batch.size", "int", 2048, minimum=1, doc="Largest batch handed to the sink.")
POLL_INTERVAL_MS = F("poll.interval.ms", "long", 500, minimum=0, doc="How long to wait for new events before an empty poll.")
DECIMAL_MODE = F("decimal.handling.mode", "enum", "precise", allowed=("precise", "double", "string"))
TIME_PRECISION_MODE = F(
    "time.precision.mode", "enum", "adaptive", allowed=("adaptive", "adaptive_time_microseconds", "connect")
)
BINARY_MODE = F("binary.handling.mode", "enum", "bytes", allowed=("bytes", "base64", "base64-url-safe", "hex"))
ERRORS_MAX_RETRIES = F("errors.max.retries", "int", -1, minimum=-1, doc="Retries of a retriable error; -1 forever, 0 none.")
ERRORS_RETRY_DELAY_INITIAL_MS = F("errors.retry.delay.initial.ms", "long", 300, minimum=1)
ERRORS_RETRY_DELAY_MAX_MS = F("errors.retry.delay.max.ms", "long", 10000, minimum=1)
OFFSET_STORAGE = F("offset.storage", "string", "org.apache.kafka.connect.storage.FileOffsetBackingStore")
OFFSET_FILE = F("offset.storage.file.filename", "string", doc="Where the file offset store keeps offsets.")
OFFSET_FLUSH_INTERVAL_MS = F("offset.flush.interval.ms", "long", 0, minimum=0)
TOPIC_TRANSACTION = F("topic.transaction", "string", "transaction", validator=_topic_prefix_ok)
TOPIC_NAMING_STRATEGY = F(
    "topic.naming.strategy", "string", allow_blank=False,
    doc="The TopicNamingStrategy (Debezium class name or a plugin's name); unset: the connector's documented default.")
TOPIC_CACHE_SIZE = F("topic.cache.size", "int", 10000, minimum=1, doc="Topic names kept per strategy (an LRU cache).")
MAX_QUEUE_SIZE_IN_BYTES = F("max.queue.size.in.bytes", "long", 0, minimum=0,
                            doc="Bytes the queue may hold (records' JSON size); 0: bounded by max.queue.size only.")
RETRIABLE_RESTART_WAIT_MS = F(
    "retriable.restart.connector.wait.ms", "long", minimum=0,
    doc="The wait before restarting after a retriable error; unset: the errors.retry.delay.* back-off.")


def _metric_tags_problem(value: str) -> str | None:
    from cdc_core.metric_tags import parse_metric_tags

    try:
        parse_metric_tags(value)
    except ValueError as e:
        return str(e)
    return None


CUSTOM_METRIC_TAGS = F("custom.metric.tags", "string", validator=_metric_tags_problem,
                       doc="k1=v1,k2=v2: added to every metric's name (JMX) and labels (Prometheus, keys sanitized to label names).")
TOPIC_HEARTBEAT_PREFIX = F("topic.heartbeat.prefix", "string", "__debezium-heartbeat", validator=_topic_prefix_ok)
PROVIDE_TRANSACTION_METADATA = F("provide.transaction.metadata", "boolean", False)
HEARTBEAT_INTERVAL_MS = F("heartbeat.interval.ms", "long", 0, minimum=0)
HEARTBEAT_ACTION_QUERY = F("heartbeat.action.query", "string", doc="SQL run against the source on every heartbeat.")


def _skipped_operations(value: list[str]) -> str | None:
    bad = [v for v in value if v not in ("c", "u", "d", "t", "none")]
    return f"unknown operations {', '.join(bad)}; use c, u, d, t or none" if bad else None


class _SkippedOperations(F):
    """``skipped.operations``: a comma list of c/u/d/t, or ``none``."""

    def parse(self, raw):  # noqa: D102
        value = super().parse(raw)
        return [] if value == ["none"] else value


SKIPPED_OPERATIONS = _SkippedOperations("skipped.operations", "list", ["t"], validator=_skipped_operations)
SKIP_MESSAGES_WITHOUT_CHANGE = F("skip.messages.without.change", "boolean", False)
SCHEMA_NAME_ADJUSTMENT = F("schema.name.adjustment.mode", "enum", "none", allowed=("none", "avro", "avro_unicode"))
FIELD_NAME_ADJUSTMENT = F("field.name.adjustment.mode", "enum", "none", allowed=("none", "avro", "avro_unicode"))
FAILURE_HANDLING = F("event.processing.failure.handling.mode", "enum", "fail", allowed=("fail", "warn", "skip", "ignore"))
CONVERTING_FAILURE_HANDLING = F(
    "event.converting.failure.handling.mode", "enum", "warn", allowed=("fail", "warn", "skip"),
    doc="A column value that cannot be converted: fail, or write null with a warning (warn) or a debug log (skip).",
)
MESSAGE_KEY_COLUMNS = F("message.key.columns", "string", doc="<table regex>:<col>,<col>;... custom message keys.")
CONVERTERS = F("converters", "list", doc="Names of custom converters; each configured by <name>.type and <name>.<param>.")
COLUMN_PROPAGATE = F("column.propagate.source.type", "regex-list")
DATATYPE_PROPAGATE = F("datatype.propagate.source.type", "regex-list")
UNAVAILABLE_PLACEHOLDER = F("unavailable.value.placeholder", "string", "__debezium_unavailable_value")
SNAPSHOT_MODE_CUSTOM_NAME = F("snapshot.mode.custom.name", "string")
SNAPSHOT_QUERY_MODE = F("snapshot.query.mode", "enum", "select_all", allowed=("select_all", "custom"))
SNAPSHOT_QUERY_MODE_CUSTOM_NAME = F("snapshot.query.mode.custom.name", "string")
SNAPSHOT_LOCKING_MODE_CUSTOM_NAME = F("snapshot.locking.mode.custom.name", "string")
SNAPSHOT_LOCK_TIMEOUT_MS = F("snapshot.lock.timeout.ms", "long", 10000, minimum=0)
SNAPSHOT_SELECT_OVERRIDES = F("snapshot.select.statement.overrides", "list")
SNAPSHOT_INCLUDE_COLLECTIONS = F("snapshot.include.collection.list", "regex-list")
# Waits at start (cdc_core.delays): before a snapshot that reads rows, and between a finished snapshot and streaming.
SNAPSHOT_DELAY_MS = F("snapshot.delay.ms", "long", 0, minimum=0, doc="Wait this long before a snapshot starts.")
STREAMING_DELAY_MS = F("streaming.delay.ms", "long", 0, minimum=0,
                       doc="Wait this long after a snapshot completes before streaming starts.")
METRICS_PORT = F("metrics.port", "int", minimum=0, maximum=65535, doc="Serve Prometheus metrics on 127.0.0.1:<port>/metrics.")
SCHEMA_HISTORY = F("schema.history.internal", "string", "io.debezium.storage.file.history.FileSchemaHistory")
SCHEMA_HISTORY_FILE = F("schema.history.internal.file.filename", "string")
# KafkaSchemaHistory (cdc_core.stores.kafka_history) and KafkaOffsetBackingStore (cdc_core.stores.kafka_offsets).
SCHEMA_HISTORY_KAFKA_TOPIC = F("schema.history.internal.kafka.topic", "string",
                               doc="The single-partition topic of the Kafka schema history.")
SCHEMA_HISTORY_KAFKA_BOOTSTRAP = F("schema.history.internal.kafka.bootstrap.servers", "string",
                                   doc="The Kafka cluster of the schema history topic.")
SCHEMA_HISTORY_KAFKA_POLL_MS = F("schema.history.internal.kafka.recovery.poll.interval.ms", "int", 100, minimum=0)
SCHEMA_HISTORY_KAFKA_ATTEMPTS = F("schema.history.internal.kafka.recovery.attempts", "int", 100, minimum=0)
SCHEMA_HISTORY_KAFKA_QUERY_MS = F("schema.history.internal.kafka.query.timeout.ms", "long", 3000, minimum=1)
SCHEMA_HISTORY_KAFKA_CREATE_MS = F("schema.history.internal.kafka.create.timeout.ms", "long", 30000, minimum=1)
OFFSET_TOPIC = F("offset.storage.topic", "string", doc="The Kafka Connect offsets topic (KafkaOffsetBackingStore).")
OFFSET_PARTITIONS = F("offset.storage.partitions", "int", 25, minimum=1)
OFFSET_REPLICATION = F("offset.storage.replication.factor", "int", 3, minimum=-1)
BOOTSTRAP_SERVERS = F("bootstrap.servers", "string", doc="The Kafka cluster of KafkaOffsetBackingStore's topic.")
# Exactly-once into Kafka (cdc_core.exactly_once): Kafka Connect's KIP-618 connector properties.
EXACTLY_ONCE_SUPPORT = F("exactly.once.support", "enum", "requested", allowed=("requested", "required"),
                         doc="required: each batch and its offsets in one Kafka transaction (kafka sink and "
                             "KafkaOffsetBackingStore); requested: at least once.")
TRANSACTION_BOUNDARY = F("transaction.boundary", "enum", "poll", allowed=("poll", "interval", "connector"),
                         doc="With exactly.once.support=required: one transaction per batch (poll, the only one supported).")

#: Kafka Connect's connector property: how many tasks may run. SQL Server spreads database.names over them
#: (cdc_sqlserver.tasks); the single-task connectors refuse more or ignore it as their Debezium classes do
#: (``Connector.max_tasks_refusal``, cdc_core.engine.connector_problems).
TASKS_MAX = F("tasks.max", "int", 1, minimum=1, doc="The most connector tasks to run (Kafka Connect's tasks.max).")

# Kafka Connect's own worker/connector properties: accepted, and meaningless here.
_CONNECT_PROPERTIES = (
    "key.converter", "value.converter", "header.converter", "offset.flush.timeout.ms",
)

# cdc's own (Debezium has no such property), listed by the connectors that have it (PostgreSQL, MySQL/MariaDB):
# forked processes that decode, build and serialize large transactions' row changes while the connector's own
# process reads the log (cdc_core.worker_pool); 0 = all in this process.
STREAMING_WORKER_PROCESSES = F(
    "streaming.worker.processes", "int", 0, minimum=0, maximum=64,
    doc="Worker processes that decode, convert and serialize large transactions' row changes into a sink (0: none).")


COMMON_FIELDS = Fields(
    [
        NAME, CONNECTOR_CLASS, TOPIC_PREFIX, TOPIC_DELIMITER,
        SCHEMA_INCLUDE, SCHEMA_EXCLUDE, TABLE_INCLUDE, TABLE_EXCLUDE, COLUMN_INCLUDE, COLUMN_EXCLUDE,
        TOMBSTONES_ON_DELETE, MAX_QUEUE_SIZE, MAX_BATCH_SIZE, POLL_INTERVAL_MS,
        DECIMAL_MODE, TIME_PRECISION_MODE, BINARY_MODE,
        ERRORS_MAX_RETRIES, ERRORS_RETRY_DELAY_INITIAL_MS, ERRORS_RETRY_DELAY_MAX_MS,
        OFFSET_STORAGE, OFFSET_FILE, OFFSET_FLUSH_INTERVAL_MS, SCHEMA_HISTORY, SCHEMA_HISTORY_FILE,
        TOPIC_TRANSACTION, TOPIC_HEARTBEAT_PREFIX, TOPIC_NAMING_STRATEGY, TOPIC_CACHE_SIZE, MAX_QUEUE_SIZE_IN_BYTES,
        RETRIABLE_RESTART_WAIT_MS, CUSTOM_METRIC_TAGS, PROVIDE_TRANSACTION_METADATA, HEARTBEAT_INTERVAL_MS,
        HEARTBEAT_ACTION_QUERY, SKIPPED_OPERATIONS, SKIP_MESSAGES_WITHOUT_CHANGE,
        SCHEMA_NAME_ADJUSTMENT, FIELD_NAME_ADJUSTMENT, FAILURE_HANDLING, CONVERTING_FAILURE_HANDLING, MESSAGE_KEY_COLUMNS,
        CONVERTERS, COLUMN_PROPAGATE, DATATYPE_PROPAGATE, UNAVAILABLE_PLACEHOLDER,
        SNAPSHOT_MODE_CUSTOM_NAME, SNAPSHOT_QUERY_MODE, SNAPSHOT_QUERY_MODE_CUSTOM_NAME,
        SNAPSHOT_LOCKING_MODE_CUSTOM_NAME, SNAPSHOT_LOCK_TIMEOUT_MS, SNAPSHOT_SELECT_OVERRIDES,
        SNAPSHOT_INCLUDE_COLLECTIONS, SNAPSHOT_DELAY_MS, STREAMING_DELAY_MS, *CONFIGURATION_BASED_FIELDS, METRICS_PORT,
        SCHEMA_HISTORY_KAFKA_TOPIC, SCHEMA_HISTORY_KAFKA_BOOTSTRAP, SCHEMA_HISTORY_KAFKA_POLL_MS,
        SCHEMA_HISTORY_KAFKA_ATTEMPTS, SCHEMA_HISTORY_KAFKA_QUERY_MS, SCHEMA_HISTORY_KAFKA_CREATE_MS,
        OFFSET_TOPIC, OFFSET_PARTITIONS, OFFSET_REPLICATION, BOOTSTRAP_SERVERS, EXACTLY_ONCE_SUPPORT, TRANSACTION_BOUNDARY,
        TASKS_MAX, *(F(n) for n in _CONNECT_PROPERTIES),
    ],
    prefixes=("key.converter.", "value.converter.", "schema.history.internal.file.",
              "schema.history.internal.producer.", "schema.history.internal.consumer.",
              "column.truncate.to.", "column.mask.with.", "column.mask.hash.",
              "snapshot.select.statement.overrides."),
)

#: Pairs of properties that cannot be set together.
EXCLUSIVE_PAIRS = (
    ("schema.include.list", "schema.exclude.list"),
    ("table.include.list", "table.exclude.list"),
    ("column.include.list", "column.exclude.list"),
)
