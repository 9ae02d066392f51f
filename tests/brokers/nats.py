"""A throwaway NATS server with JetStream: Debian's ``nats-server -js`` on a free port, its own store directory."""

from __future__ import annotations

import shutil
import signal
import socket
from pathlib import Path
from typing import Any, ClassVar

from cdc_core.throwaway_server import ThrowawayServer, ThrowawayServerError

#: Where Debian's nats-server package puts the binary.
DEBIAN_BINARY = "/usr/sbin/nats-server"


class EmbeddedNatsError(ThrowawayServerError):
    """Raised when the throwaway NATS server cannot be started."""


def nats_binary() -> str:
    """The nats-server binary (Debian's, else the first on PATH)."""
    path = DEBIAN_BINARY if Path(DEBIAN_BINARY).is_file() else shutil.which("nats-server")
    if not path:
        raise EmbeddedNatsError(f"cannot find nats-server; {EmbeddedNats.install_hint}")
    return path


class EmbeddedNats(ThrowawayServer):
    """``nats-server -js`` on 127.0.0.1:<free port>, JetStream files under its temporary directory.

    ``user``/``password`` (settings) turn on username/password authentication. ``restart()`` keeps
    the port and the JetStream store, so a file-storage stream survives it.
    """

    product: ClassVar[str] = "NATS"
    error: ClassVar[type[ThrowawayServerError]] = EmbeddedNatsError
    install_hint: ClassVar[str] = "apt-get install nats-server"
    temp_prefix: ClassVar[str] = "cdc-nats-"
    log_name: ClassVar[str] = "nats.log"
    stop_signals: ClassVar[tuple[tuple[int, float | None], ...]] = ((signal.SIGTERM, 10.0),)

    @property
    def pid_file(self) -> Path:
        """Written by nats-server (``-P``)."""
        return self.base_dir / "nats.pid"

    @property
    def url(self) -> str:
        """The ``debezium.sink.nats-jetstream.url`` value."""
        return f"nats://{self.host}:{self.port}"

    def _initialize(self) -> None:
        nats_binary()
        (self.base_dir / "jetstream").mkdir()

    def _command(self) -> list[str]:
        cmd = [nats_binary(), "-a", self.host, "-p", str(self.port), "-js", "-sd", str(self.base_dir / "jetstream"),
               "-P", str(self.pid_file), "-n", f"cdc-test-{self.port}"]
        if self._settings.get("user"):
            cmd += ["--user", self._settings["user"], "--pass", self._settings.get("password", "")]
        return cmd

    def _ping(self) -> bool:
        """nats-server greets every client with an ``INFO`` line; JetStream is up once that says so."""
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5) as s:
                s.settimeout(1.0)
                greeting = s.recv(4096)
        except OSError:
            return False
        return greeting.startswith(b"INFO") and b'"jetstream":true' in greeting.replace(b" ", b"")

    def __enter__(self) -> Any:
        return self.start()
