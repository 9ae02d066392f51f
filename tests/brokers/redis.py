"""A throwaway Redis: Debian's ``/usr/bin/redis-server`` on a free port, its own directory, no persistence by default."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path
from typing import Any, ClassVar

from cdc_core.throwaway_server import ThrowawayServer, ThrowawayServerError

REDIS_SERVER = "/usr/bin/redis-server"


class EmbeddedRedisError(ThrowawayServerError):
    """Raised when the throwaway Redis cannot be started."""


def redis_server_binary() -> str:
    """The redis-server binary (Debian's, else the one on PATH)."""
    if Path(REDIS_SERVER).is_file():
        return REDIS_SERVER
    found = shutil.which("redis-server")
    if not found:
        raise EmbeddedRedisError("the Redis tests need redis-server (apt-get install redis-server)")
    return found


class EmbeddedRedis(ThrowawayServer):
    """redis-server on 127.0.0.1, never the machine's own on 6379; settings are redis.conf directives.

    ``EmbeddedRedis({"requirepass": "pw"})`` asks for a password; ``{"appendonly": "yes"}`` keeps the
    data over a ``restart()`` (a test that stops Redis mid-stream and reads everything afterwards).
    """

    product: ClassVar[str] = "Redis"
    error: ClassVar[type[ThrowawayServerError]] = EmbeddedRedisError
    install_hint: ClassVar[str] = "apt-get install redis-server"
    temp_prefix: ClassVar[str] = "cdc-redis-"
    log_name: ClassVar[str] = "redis.log"
    writes_pid_file: ClassVar[bool] = False
    setting_on: ClassVar[str] = "yes"
    setting_off: ClassVar[str] = "no"
    default_settings: ClassVar[dict[str, str]] = {"save": "", "appendonly": "no", "protected-mode": "no"}

    @property
    def pid_file(self) -> Path:
        """Written by the base class once redis-server started (daemonize is off, so it writes none)."""
        return self.base_dir / "redis.pid"

    @property
    def address(self) -> str:
        """The ``debezium.sink.redis.address`` value."""
        return f"{self.host}:{self.port}"

    def _initialize(self) -> None:
        redis_server_binary()

    def _command(self) -> list[str]:
        cmd = [redis_server_binary(), "--port", str(self.port), "--bind", self.host, "--dir", str(self.base_dir),
               "--daemonize", "no", "--logfile", ""]
        for key, value in self._settings.items():
            cmd += [f"--{key}", value]
        return cmd

    def _ping(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                reply = s.recv(64)
        except OSError:
            return False
        # "-NOAUTH" also means it answers (a password is set).
        return reply.startswith((b"+PONG", b"-NOAUTH"))

    def client(self, **kwargs: Any) -> Any:
        """A redis-py client for the test's own reads and writes."""
        import redis

        password = self._settings.get("requirepass")
        return redis.Redis(host=self.host, port=self.port, password=password, **kwargs)

    def __enter__(self) -> Any:
        return self.start()
