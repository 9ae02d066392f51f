"""``cdc run`` into RabbitMQ (Debezium Server's ``rabbitmq`` sink) on a throwaway rabbitmq-server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from broker_sink_scenarios import (
    SECRET, Message, broker_restart_mid_stream, changes_once_in_order_as_file_sink, kill_9_under_writes,
    refused_at_start,
)

pika = pytest.importorskip("pika", reason="the RabbitMQ sink tests need pika (uv sync --all-extras)")
if not os.access("/usr/lib/rabbitmq/bin/rabbitmq-server", os.X_OK):
    pytest.skip("rabbitmq-server is not installed (apt-get install rabbitmq-server)", allow_module_level=True)

from brokers.rabbitmq import EmbeddedRabbitMQ  # noqa: E402

P = "debezium.sink.rabbitmq."


class RabbitMQ:
    """The throwaway broker as the scenarios see it: a durable direct exchange per topic, a queue bound to it.

    As in Debezium Server's own test: exchange = the topic's name (``exchange`` unset), routing key = the
    topic's name (``routingKey.source=topic``).
    """

    publishes_tombstones = True

    def __init__(self, server: EmbeddedRabbitMQ):
        self.server = server
        self._seen: list[Message] = []  # consumed messages are gone from the queue: keep them
        self._queues: list[str] = []

    def sink_properties(self) -> dict[str, Any]:
        return {"debezium.sink.type": "rabbitmq", P + "connection.host": self.server.host,
                P + "connection.port": str(self.server.port), P + "routingKey.source": "topic",
                P + "retry.initial.delay.ms": "200", P + "retry.max.delay.ms": "1000"}

    def prepare(self, topics: list[str]) -> None:
        self._seen, self._queues = [], []
        connection = pika.BlockingConnection(self.server.parameters())
        try:
            channel = connection.channel()
            for topic in topics:
                queue = f"test-{topic}"
                channel.exchange_declare(topic, "direct", durable=True)
                channel.queue_declare(queue, durable=True)
                channel.queue_bind(queue, topic, topic)
                channel.queue_purge(queue)
                self._queues.append(queue)
        finally:
            connection.close()

    def messages(self) -> list[Message]:
        try:
            connection = pika.BlockingConnection(self.server.parameters())
        except Exception:  # noqa: BLE001 - the broker is down: nothing new now
            return list(self._seen)
        try:
            channel = connection.channel()
            for queue in self._queues:
                while True:
                    method, properties, body = channel.basic_get(queue, auto_ack=True)
                    if method is None:
                        break
                    headers = {k: v.decode() if isinstance(v, bytes) else v
                               for k, v in (properties.headers or {}).items()}
                    assert properties.delivery_mode == 2, properties
                    self._seen.append(Message(method.routing_key, body, headers))
        except Exception:  # noqa: BLE001 - the broker went down while reading: the rest comes next time
            pass
        finally:
            try:
                connection.close()
            except Exception:  # noqa: BLE001
                pass
        return list(self._seen)

    def stop(self) -> None:
        self.server._shutdown()

    def start(self) -> None:
        self.server.start()


@pytest.fixture(scope="module")
def rabbitmq_server() -> Iterator[EmbeddedRabbitMQ]:
    """One broker for the module (RabbitMQ takes seconds to boot)."""
    with EmbeddedRabbitMQ() as server:
        yield server


@pytest.fixture
def broker(rabbitmq_server: EmbeddedRabbitMQ) -> RabbitMQ:
    return RabbitMQ(rabbitmq_server)


def test_every_change_once_in_order_with_the_file_sinks_bytes_and_headers(broker, pg_server, pg_db, tmp_path):
    """The values the file sink writes, in order, tombstones as null.value, key-change headers as AMQP headers."""
    changes_once_in_order_as_file_sink(broker, pg_server, pg_db, tmp_path)


def test_kill_9_under_writes_loses_nothing(broker, pg_server, pg_db, tmp_path):
    """After kill -9 and a restart every change is there; re-sent ones are at most the unacknowledged batches."""
    duplicates = kill_9_under_writes(broker, pg_server, pg_db, tmp_path)
    print(f"duplicates after kill -9: {duplicates}")
    assert duplicates <= 2048  # at most one max.batch.size of unacknowledged records is sent again


def test_rabbitmq_restart_mid_stream_loses_nothing(broker, pg_server, pg_db, tmp_path):
    """rabbitmq-server stops for seconds and comes back on the same port and data: cdc retries and resumes."""
    duplicates = broker_restart_mid_stream(broker, pg_server, pg_db, tmp_path)
    print(f"duplicates after the broker restart: {duplicates}")
    assert duplicates <= 2048


def test_refusals_are_one_clear_line(rabbitmq_server, pg_server, pg_db, tmp_path):
    """Wrong password, unknown host, missing exchange: one line naming the property, exit 1."""
    base = {"debezium.sink.type": "rabbitmq", P + "connection.host": rabbitmq_server.host,
            P + "connection.port": str(rabbitmq_server.port)}
    lines = refused_at_start(pg_server, pg_db, tmp_path, {
        "password": ({**base, P + "connection.password": SECRET}, P + "connection.password"),
        "host": ({**base, P + "connection.host": "no-such-host.invalid", P + "connection.password": SECRET},
                 P + "connection.host"),
        "exchange": ({**base, P + "exchange": "no-such-exchange"}, P + "exchange"),
    })
    assert "credentials" in lines["password"]
    assert "no-such-host.invalid" in lines["host"]
    assert "no-such-exchange" in lines["exchange"]


def test_validate_names_each_bad_property(pg_server, pg_db, tmp_path):
    """``cdc validate``: a bad deliveryMode, routingKey.source, a misspelt property, each on its own line (exit 2)."""
    from cdc_process import run_cli, server_properties, write_properties

    props = {k: v for k, v in server_properties(pg_server, pg_db, tmp_path).items() if not k.startswith("debezium.sink.")}
    props.update({"debezium.sink.type": "rabbitmq", P + "deliveryMode": "3", P + "routingKey.source": "table",
                  P + "routingkey": "x", P + "connection.password": SECRET,
                  P + "connection.uri": f"amqp://guest:{SECRET}@127.0.0.1:1/%2f"})
    done = run_cli("validate", str(write_properties(tmp_path / "app.properties", props)))
    assert done.returncode == 2, done.stderr
    for expected in (P + "deliveryMode: '3' is above the maximum 2",
                     P + "routingKey.source: 'table' is not one of: static, topic, key",
                     P + "routingkey: unknown property"):
        assert expected in done.stderr, done.stderr
    assert SECRET not in done.stdout + done.stderr


def test_routing_key_sources_and_auto_created_queues(rabbitmq_server):
    """routingKey.source=key routes by the record's key; autoCreateRoutingKey declares the topic's queue."""
    from cdc_core.config import Config
    from cdc_core.sinks.rabbitmq import RabbitMqSink
    from cdc_core.spi.sink import SinkRecord

    connection = pika.BlockingConnection(rabbitmq_server.parameters())
    channel = connection.channel()
    channel.queue_declare("by-key", durable=True)
    channel.queue_purge("by-key")
    channel.queue_bind("by-key", "amq.direct", '{"id":7}')
    base = {"connection.host": rabbitmq_server.host, "connection.port": rabbitmq_server.port, "exchange": "amq.direct"}
    sink = RabbitMqSink(Config({**base, "routingKey.source": "key"}))
    try:
        sink.write([SinkRecord("db.s.t", b'{"id":7}', b'{"v":1}', {}), SinkRecord("db.s.t", b'{"id":8}', b'{"v":2}', {}),
                    SinkRecord("db.s.t", b'{"id":7}', None, {})])
    finally:
        sink.close()
    bodies = []
    while (got := channel.basic_get("by-key", auto_ack=True))[0] is not None:
        bodies.append(got[2])
    assert bodies == [b'{"v":1}', b"default"]  # id 8 is routed nowhere; the tombstone is null.value
    sink = RabbitMqSink(Config({**base, "routingKeyFromTopicName": "true", "autoCreateRoutingKey": "true"}))
    try:
        sink.write([SinkRecord("db.s.auto", None, b"{}", {})])
    finally:
        sink.close()
    assert channel.queue_declare("db.s.auto", durable=True, passive=True).method.queue == "db.s.auto"
    connection.close()


def test_frames_made_by_the_sink_carry_large_bodies_headers_and_delivery_mode(rabbitmq_server):
    """A body larger than the frame size (split in body frames), a header table, an empty body and
    deliveryMode=1 arrive as a consumer reads them through pika (the sink writes the AMQP frames itself)."""
    from cdc_core.config import Config
    from cdc_core.sinks.rabbitmq import RabbitMqSink
    from cdc_core.spi.sink import SinkRecord

    connection = pika.BlockingConnection(rabbitmq_server.parameters())
    channel = connection.channel()
    channel.queue_declare("frames", durable=True)
    channel.queue_purge("frames")
    channel.queue_bind("frames", "amq.direct", "frames")
    base = {"connection.host": rabbitmq_server.host, "connection.port": rabbitmq_server.port,
            "exchange": "amq.direct", "routingKey": "frames"}
    big = b'{"v":"' + b"x" * 400_000 + b'"}'  # the broker's frame_max is 128 KB: four body frames
    records = [SinkRecord("db.s.t", b"1", big, {}), SinkRecord("db.s.t", b"2", b'{"v":2}', {"h": {"a": 1}, "s": "t"}),
               SinkRecord("db.s.t", b"3", b"", {})]
    for mode in ("2", "1"):
        sink = RabbitMqSink(Config({**base, "deliveryMode": mode}))
        try:
            sink.write(records)
        finally:
            sink.close()
        got = []
        while (message := channel.basic_get("frames", auto_ack=True))[0] is not None:
            got.append(message)
        assert [body for _, _, body in got] == [big, b'{"v":2}', b""]
        assert [p.delivery_mode for _, p, _ in got] == [int(mode)] * 3
        assert [p.headers for _, p, _ in got] == [{}, {"h": '{"a":1}', "s": "t"}, {}]
    connection.close()
