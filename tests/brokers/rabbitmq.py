"""A throwaway RabbitMQ: Debian's rabbitmq-server with its own node, ports, epmd and directories.

What makes Debian's rabbitmq-server run as a throwaway (found by trying):

- run ``/usr/lib/rabbitmq/bin/rabbitmq-server`` itself, not ``/usr/sbin/rabbitmq-server`` (a wrapper
  that cds to /var/lib/rabbitmq and logs to /var/log/rabbitmq), as the ``rabbitmq`` user when root;
- ``RABBITMQ_CONF_ENV_FILE`` pointing at an empty file: Debian's /etc/rabbitmq/rabbitmq-env.conf
  sets ``NODENAME=rabbit@localhost``, which would clash with the machine's own broker;
- ``RABBITMQ_NODENAME=cdc-test-<port>@localhost``, ``RABBITMQ_NODE_IP_ADDRESS=127.0.0.1``,
  ``RABBITMQ_NODE_PORT``, ``RABBITMQ_MNESIA_BASE``, ``RABBITMQ_LOG_BASE``, ``RABBITMQ_LOGS=-``
  (log to stdout), ``RABBITMQ_ENABLED_PLUGINS_FILE``, ``RABBITMQ_CONFIG_FILE``,
  ``RABBITMQ_ADVANCED_CONFIG_FILE``, ``RABBITMQ_PID_FILE`` under the temporary directory, and
  ``HOME`` there too (Erlang writes its ``.erlang.cookie`` in it);
- Erlang distribution: an epmd of our own on a free port (``ERL_EPMD_PORT``; the machine's epmd on
  4369 is never used), and the distribution port pinned to a free one with
  ``-kernel inet_dist_listen_min/max`` (``RABBITMQ_DIST_PORT`` alone did not pin it in 3.10).

Start-up takes about 5-10 seconds: tests start one broker per session. ``restart()`` keeps the
node name, ports and Mnesia directory, so durable exchanges, queues and persistent messages survive.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any, ClassVar

from cdc_core.server_watchdog import ServerWatchdog
from cdc_core.throwaway_server import ThrowawayServer, ThrowawayServerError, free_port

SERVER_SCRIPT = "/usr/lib/rabbitmq/bin/rabbitmq-server"
EPMD = "/usr/bin/epmd"


class EmbeddedRabbitMQError(ThrowawayServerError):
    """Raised when the throwaway RabbitMQ cannot be started."""


class EmbeddedRabbitMQ(ThrowawayServer):
    """rabbitmq-server on 127.0.0.1:<free port> (AMQP), user guest/guest, with its own epmd."""

    product: ClassVar[str] = "RabbitMQ"
    error: ClassVar[type[ThrowawayServerError]] = EmbeddedRabbitMQError
    service_account: ClassVar[str] = "rabbitmq"
    install_hint: ClassVar[str] = "apt-get install rabbitmq-server"
    temp_prefix: ClassVar[str] = "cdc-rabbitmq-"
    log_name: ClassVar[str] = "rabbitmq.log"
    stop_signals: ClassVar[tuple[tuple[int, float | None], ...]] = ((signal.SIGTERM, 30.0),)
    env_drop_prefixes: ClassVar[tuple[str, ...]] = ("RABBITMQ_", "ERL_")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.epmd_port = 0
        self.dist_port = 0
        self._epmd: subprocess.Popen[bytes] | None = None
        self._epmd_watchdog: ServerWatchdog | None = None

    @property
    def pid_file(self) -> Path:
        """Written by rabbitmq-server (``RABBITMQ_PID_FILE``)."""
        return self.base_dir / "rabbitmq.pid"

    @property
    def node(self) -> str:
        """The Erlang node name."""
        return f"cdc-test-{self.port}@localhost"

    def _initialize(self) -> None:
        for path in (SERVER_SCRIPT, EPMD):
            if not os.access(path, os.X_OK):
                raise self.error(f"cannot find {path}; {self.install_hint}")
        for name in ("mnesia", "log", "home"):
            (self.base_dir / name).mkdir()
        (self.base_dir / "rabbitmq-env.conf").write_text("")
        (self.base_dir / "enabled_plugins").write_text("[].\n")
        (self.base_dir / "rabbitmq.conf").write_text("loopback_users = none\n")
        self.epmd_port = free_port(self.host)
        self.dist_port = free_port(self.host)
        self._chown_tree(self.base_dir)

    def _popen_kwargs(self) -> dict[str, Any]:
        kwargs = super()._popen_kwargs()
        base = self.base_dir
        kwargs["env"].update({
            "HOME": str(base / "home"),
            "ERL_EPMD_PORT": str(self.epmd_port),
            "ERL_EPMD_ADDRESS": self.host,
            "RABBITMQ_CONF_ENV_FILE": str(base / "rabbitmq-env.conf"),
            "RABBITMQ_NODENAME": self.node,
            "RABBITMQ_NODE_IP_ADDRESS": self.host,
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "RABBITMQ_MNESIA_BASE": str(base / "mnesia"),
            "RABBITMQ_LOG_BASE": str(base / "log"),
            "RABBITMQ_LOGS": "-",
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(base / "enabled_plugins"),
            "RABBITMQ_CONFIG_FILE": str(base / "rabbitmq"),
            "RABBITMQ_ADVANCED_CONFIG_FILE": str(base / "advanced.config"),
            "RABBITMQ_PID_FILE": str(self.pid_file),
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": (
                f"-kernel inet_dist_use_interface {{127,0,0,1}} -kernel inet_dist_listen_min {self.dist_port} "
                f"-kernel inet_dist_listen_max {self.dist_port}"),
        })
        return kwargs

    def _command(self) -> list[str]:
        self._start_epmd()
        return [SERVER_SCRIPT]

    def _start_epmd(self) -> None:
        """Our own epmd on ``epmd_port`` (started once, kept across restarts, stopped with the broker)."""
        if self._epmd is not None and self._epmd.poll() is None:
            return
        self._epmd = subprocess.Popen([EPMD, "-port", str(self.epmd_port), "-address", self.host],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      start_new_session=True, **self._popen_kwargs())
        pid_file = self.base_dir / "epmd.pid"
        pid_file.write_text(str(self._epmd.pid))
        if self._epmd_watchdog is None:  # epmd too goes if this process is killed
            self._epmd_watchdog = ServerWatchdog(pid_file, self.base_dir, grace_s=5, remove_directory=False)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection((self.host, self.epmd_port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        raise self.error(f"epmd did not start on {self.host}:{self.epmd_port}")

    def _ping(self) -> bool:
        """An AMQP connection opens (the listener comes up last, once the broker has booted)."""
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5):
                pass
        except OSError:
            return False
        import pika

        try:
            pika.BlockingConnection(self.parameters()).close()
        except Exception:  # noqa: BLE001 - not ready yet
            return False
        return True

    def parameters(self, **overrides: Any) -> Any:
        """pika connection parameters for this broker (guest/guest)."""
        import pika

        options: dict[str, Any] = {"host": self.host, "port": self.port,
                                   "credentials": pika.PlainCredentials("guest", "guest"),
                                   "connection_attempts": 1, "socket_timeout": 5}
        options.update(overrides)
        return pika.ConnectionParameters(**options)

    def _shutdown(self) -> None:
        """Stop the broker (and every Erlang child it has), keeping our epmd for a restart."""
        proc = self._proc
        children = _descendants(proc.pid) if proc is not None and proc.poll() is None else []
        super()._shutdown()
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        """SIGKILL the broker and every process below it, as a crash would."""
        proc = self._proc
        children = _descendants(proc.pid) if proc is not None and proc.poll() is None else []
        super().kill()
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def stop(self) -> None:
        """Stop the broker and our epmd, and remove the temporary directory."""
        super().stop()
        if self._epmd is not None:
            self._epmd.terminate()
            try:
                self._epmd.wait(10)
            except subprocess.TimeoutExpired:
                self._epmd.kill()
                self._epmd.wait()
            self._epmd = None
        if self._epmd_watchdog is not None:
            self._epmd_watchdog.release()
            self._epmd_watchdog = None

    def __enter__(self) -> Any:
        return self.start()


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (the shell script, beam.smp, erl_child_setup, inet_gethost)."""
    from cdc_core.throwaway_server import child_pids

    out, todo = [], [pid]
    while todo:
        for child in child_pids(todo.pop()):
            out.append(child)
            todo.append(child)
    return out
