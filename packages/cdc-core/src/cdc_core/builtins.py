"""The built-in plugins, registered through the same hooks as any third-party plugin."""

from __future__ import annotations

from cdc_core.hookspecs import hookimpl


@hookimpl
def register_sinks() -> list[type]:
    """The stdout and file sinks, and the message brokers' and HTTP's (each imports its client library only when used)."""
    from cdc_core.sinks.file import FileSink
    from cdc_core.sinks.http import HttpSink
    from cdc_core.sinks.kafka import KafkaSink
    from cdc_core.sinks.nats_jetstream import NatsJetStreamSink
    from cdc_core.sinks.rabbitmq import RabbitMqSink
    from cdc_core.sinks.redis import RedisStreamSink
    from cdc_core.sinks.stdout import StdoutSink

    return [StdoutSink, FileSink, KafkaSink, NatsJetStreamSink, RabbitMqSink, RedisStreamSink, HttpSink]


@hookimpl
def register_offset_stores() -> list[type]:
    """The file, memory, Kafka and Redis offset stores."""
    from cdc_core.stores.file_offsets import FileOffsetStore
    from cdc_core.stores.kafka_offsets import KafkaOffsetStore
    from cdc_core.stores.memory_offsets import MemoryOffsetStore
    from cdc_core.stores.redis_offsets import RedisOffsetStore

    return [FileOffsetStore, MemoryOffsetStore, KafkaOffsetStore, RedisOffsetStore]


@hookimpl
def register_schema_history_stores() -> list[type]:
    """The file, memory, Kafka and Redis schema history stores."""
    from cdc_core.stores.file_history import FileSchemaHistoryStore
    from cdc_core.stores.kafka_history import KafkaSchemaHistoryStore
    from cdc_core.stores.memory_history import MemorySchemaHistoryStore
    from cdc_core.stores.redis_history import RedisSchemaHistoryStore

    return [FileSchemaHistoryStore, MemorySchemaHistoryStore, KafkaSchemaHistoryStore, RedisSchemaHistoryStore]


@hookimpl
def register_serializers() -> list[type]:
    """Kafka Connect's JSON converter, Debezium's CloudEvents converter and Confluent's Avro converter."""
    from cdc_core.serializers.avro import AvroSerializer
    from cdc_core.serializers.cloudevents import CloudEventsSerializer
    from cdc_core.serializers.json import JsonSerializer

    return [JsonSerializer, CloudEventsSerializer, AvroSerializer]


@hookimpl
def register_snapshotters() -> list[type]:
    """Every built-in ``snapshot.mode``."""
    from cdc_core.snapshot.modes import BUILTIN_SNAPSHOTTERS

    return list(BUILTIN_SNAPSHOTTERS)


@hookimpl
def register_snapshot_queries() -> list[type]:
    """``select_all``."""
    from cdc_core.snapshot.modes import SelectAllQuery

    return [SelectAllQuery]


@hookimpl
def register_snapshot_locks() -> list[type]:
    """``none`` and ``shared``."""
    from cdc_core.snapshot.modes import NoLock, SharedLock

    return [NoLock, SharedLock]


@hookimpl
def register_signal_channels() -> list[type]:
    """``source`` (the signal table), ``file``, ``kafka`` and ``in-process`` (``Engine.signal``)."""
    from cdc_core.signals.channels import FileSignalChannel, InProcessSignalChannel, SourceSignalChannel
    from cdc_core.signals.kafka_channel import KafkaSignalChannel

    return [SourceSignalChannel, FileSignalChannel, KafkaSignalChannel, InProcessSignalChannel]


@hookimpl
def register_notification_channels() -> list[type]:
    """``log`` and ``sink``."""
    from cdc_core.notifications.channels import LogNotificationChannel, SinkNotificationChannel

    return [LogNotificationChannel, SinkNotificationChannel]


@hookimpl
def register_topic_naming_strategies() -> list[type]:
    """Debezium's DefaultTopicNamingStrategy and SchemaTopicNamingStrategy."""
    from cdc_core.topics import DefaultTopicNamingStrategy, SchemaTopicNamingStrategy

    return [DefaultTopicNamingStrategy, SchemaTopicNamingStrategy]


@hookimpl
def register_cli_commands(subparsers: object) -> None:
    """``cdc signal CONFIG TYPE [DATA]``: send a signal to a running ``cdc run`` through its signal file."""
    from cdc_core.signals.command import add_signal_command

    add_signal_command(subparsers)


@hookimpl
def register_transforms() -> list[type]:
    """Debezium's ExtractNewRecordState, ByLogicalTableRouter, Filter, ContentBasedRouter and outbox EventRouter,
    and Kafka Connect's transforms."""
    from cdc_core.transforms.content_router import ContentBasedRouter
    from cdc_core.transforms.filter import Filter
    from cdc_core.transforms.outbox import EventRouter
    from cdc_core.transforms.registry import BUILTIN_TRANSFORMS

    return [*BUILTIN_TRANSFORMS, Filter, ContentBasedRouter, EventRouter]


@hookimpl
def register_predicates() -> list[type]:
    """Kafka Connect's TopicNameMatches, HasHeaderKey and RecordIsTombstone."""
    from cdc_core.transforms.predicates import HasHeaderKey, RecordIsTombstone, TopicNameMatches

    return [TopicNameMatches, HasHeaderKey, RecordIsTombstone]
