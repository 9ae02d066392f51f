"""The properties of signals, notifications and ad hoc snapshots, with Debezium's names and defaults."""

from __future__ import annotations

from cdc_core.config import Config
from cdc_core.config.fields import ConfigField as F
from cdc_core.config.fields import Fields

SIGNAL_CHANNELS = F("signal.enabled.channels", "list", ["source"],
                    doc="Signal channels to read: source, file, or a plugin's channel name.")
SIGNAL_DATA_COLLECTION = F("signal.data.collection", "string",
                           doc="The signal table <schema>.<table> (columns id, type, data); also holds the watermarks.")
SIGNAL_FILE = F("signal.file", "string", "file-signals.txt", doc="The file the file channel reads (one JSON signal a line).")
SIGNAL_POLL_INTERVAL_MS = F("signal.poll.interval.ms", "long", 5000, minimum=1,
                            doc="How often the file channel looks for new lines.")
NOTIFICATION_CHANNELS = F("notification.enabled.channels", "list", [],
                          doc="Notification channels: log, sink, or a plugin's channel name.")
NOTIFICATION_TOPIC = F("notification.sink.topic.name", "string", doc="The topic of the sink notification channel.")
CHUNK_SIZE = F("incremental.snapshot.chunk.size", "int", 1024, minimum=1, doc="Rows per incremental snapshot chunk.")
WATERMARKING = F("incremental.snapshot.watermarking.strategy", "enum", "insert_insert",
                 allowed=("insert_insert", "insert_delete"), doc="How chunk windows are marked in the signal table.")
MAX_THREADS = F("snapshot.max.threads", "int", 1, minimum=1,
                doc="Tables whose incremental snapshot chunks are read at the same time.")

# The kafka signal channel (cdc_core.signals.kafka_channel); signal.consumer.* goes to its consumer.
SIGNAL_KAFKA_TOPIC = F("signal.kafka.topic", "string", doc="The signal topic (default <topic.prefix>-signal); one partition.")
SIGNAL_KAFKA_BOOTSTRAP = F("signal.kafka.bootstrap.servers", "string", doc="The Kafka cluster of the signal topic.")
SIGNAL_KAFKA_GROUP = F("signal.kafka.groupId", "string", "kafka-signal", doc="The signal consumer's group id.")
SIGNAL_KAFKA_POLL_MS = F("signal.kafka.poll.timeout.ms", "int", 100, minimum=0,
                         doc="Accepted; the channel never waits (it is polled between batches).")
SIGNAL_KAFKA_COMMIT = F("signal.kafka.consumer.offset.commit.enabled", "boolean", False,
                        doc="Commit the signal consumer's offset, so signals sent while stopped run after the restart.")

SIGNAL_FIELDS = Fields([
    SIGNAL_CHANNELS, SIGNAL_DATA_COLLECTION, SIGNAL_FILE, SIGNAL_POLL_INTERVAL_MS,
    NOTIFICATION_CHANNELS, NOTIFICATION_TOPIC, CHUNK_SIZE, WATERMARKING, MAX_THREADS,
    SIGNAL_KAFKA_TOPIC, SIGNAL_KAFKA_BOOTSTRAP, SIGNAL_KAFKA_GROUP, SIGNAL_KAFKA_POLL_MS, SIGNAL_KAFKA_COMMIT,
], prefixes=("signal.consumer.",))


def signal_problems(config: Config, plugins) -> list[str]:
    """Problems across the signal and notification properties: unknown channels, a missing topic."""
    out: list[str] = []
    try:
        signal_channels = config.get(SIGNAL_CHANNELS) or []
        notification_channels = config.get(NOTIFICATION_CHANNELS) or []
    except Exception:  # the single-property check reports a bad value
        return out
    known = set(plugins.names("signal channel"))
    for name in signal_channels:
        if name not in known:
            out.append(f"{SIGNAL_CHANNELS.name}: no signal channel called {name!r}; available: {', '.join(sorted(known))}")
    known = set(plugins.names("notification channel"))
    for name in notification_channels:
        if name not in known:
            out.append(f"{NOTIFICATION_CHANNELS.name}: no notification channel called {name!r}; "
                       f"available: {', '.join(sorted(known))}")
    if "kafka" in signal_channels and not config.get(SIGNAL_KAFKA_BOOTSTRAP):
        out.append(f"{SIGNAL_KAFKA_BOOTSTRAP.name}: is required when the kafka signal channel is enabled")
    if "sink" in notification_channels and not config.get(NOTIFICATION_TOPIC):
        out.append(f"{NOTIFICATION_TOPIC.name}: is required when the sink notification channel is enabled")
    return out
