"""Exactly-once into Kafka: when it may be turned on, and the producer's stable ``transactional.id``.

The properties are Kafka Connect's from KIP-618, on the connector side (``debezium.source.*``):
``exactly.once.support=required`` turns it on (``requested``, Kafka Connect's default, keeps at least
once here: cdc has no worker-level ``exactly.once.source.support`` switch, so the connector's
``required`` is the switch), and ``transaction.boundary=poll`` (the default, and the only boundary
supported) makes each batch the engine takes from its queue one transaction. Kafka Connect's
``interval`` and ``connector`` boundaries are refused. As in Kafka Connect, exactly-once needs the
offsets in Kafka (``KafkaOffsetBackingStore``, on the sink's cluster), since a batch's records and its
offset record are committed by one transactional producer (cdc_core.sinks.kafka.KafkaSink.write_transaction).
"""

from __future__ import annotations

from typing import Any, Callable

from cdc_core.config import Config
from cdc_core.config import common as c

#: The names ``offset.storage`` may give KafkaOffsetBackingStore (cdc_core.stores.kafka_offsets).
KAFKA_OFFSET_STORES = ("kafka", "org.apache.kafka.connect.storage.KafkaOffsetBackingStore")


def enabled(config: Config) -> bool:
    """Whether the connector asks for exactly-once (``exactly.once.support=required``)."""
    return config.get(c.EXACTLY_ONCE_SUPPORT) == "required"


def _hosts(bootstrap: Any) -> set[str]:
    return {s.strip() for s in str(bootstrap or "").split(",") if s.strip()}


def problems(config: Config, sink_type: str | None, sink_bootstrap: Any,
             display: Callable[[str], str] = lambda name: name) -> list[str]:
    """Why exactly-once cannot be given to this configuration, one line each naming the property (empty: it can)."""
    if not enabled(config):
        return []
    asked = f"{display(c.EXACTLY_ONCE_SUPPORT.name)}=required"
    out = []
    if sink_type != "kafka":
        out.append(f"{asked}: needs debezium.sink.type=kafka (the {sink_type or 'handler'} sink has no transactions); "
                   f"set {display(c.EXACTLY_ONCE_SUPPORT.name)}=requested for at least once")
    if config.get(c.OFFSET_STORAGE) not in KAFKA_OFFSET_STORES:
        out.append(f"{asked}: needs {display(c.OFFSET_STORAGE.name)}={KAFKA_OFFSET_STORES[1]} (the offsets are "
                   f"committed in the same Kafka transaction as the records), not {config.get(c.OFFSET_STORAGE)}")
    elif sink_type == "kafka" and config.get(c.BOOTSTRAP_SERVERS) and _hosts(config.get(c.BOOTSTRAP_SERVERS)) != _hosts(sink_bootstrap):
        out.append(f"{asked}: {display(c.BOOTSTRAP_SERVERS.name)} must name the kafka sink's cluster "
                   f"(debezium.sink.kafka.producer.bootstrap.servers): a transaction cannot span two clusters")
    if config.get(c.TRANSACTION_BOUNDARY) != "poll":
        out.append(f"{display(c.TRANSACTION_BOUNDARY.name)}={config.get(c.TRANSACTION_BOUNDARY)}: only poll "
                   f"(one transaction per batch) is supported with {asked}")
    return out


def transactional_id(config: Config) -> str:
    """The stable default ``transactional.id``: a restarted process fences the dead one and aborts its open transaction."""
    return f"cdc-{config.get(c.NAME) or config.get(c.TOPIC_PREFIX)}"
