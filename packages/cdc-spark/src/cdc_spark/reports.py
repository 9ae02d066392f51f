"""Chunk-read reports from executors to the driver: where each chunk's rows were read (``ChunkRead``).

Connectors whose chunks are read at positions of their own (``SnapshotPlan.reports_reads``) need
every position before the stream starts (``cdc_core.spi.chunks``). Executors cannot hand data back
to a streaming source, so the driver-side reader listens on a TCP port and each chunk reader sends
its report there before its rows, waiting for the acknowledgement. Reports carry a per-listener
random token; others are ignored. The address executors use is ``chunkReportHost`` (default: this
host's name resolved, or 127.0.0.1 when that fails); the listener binds every interface unless that
address is a loopback one.
"""

from __future__ import annotations

import json
import logging
import secrets
import socket
import socketserver
import threading
from collections.abc import Mapping
from typing import Any

log = logging.getLogger("cdc.spark")

#: Seconds a chunk reader waits for the driver to acknowledge its report.
REPORT_TIMEOUT_S = 60.0


def default_host() -> str:
    """This host's address as other machines would reach it (127.0.0.1 if the name does not resolve)."""
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


class _Server(socketserver.ThreadingTCPServer):
    """The listener's server (set here, not on ThreadingTCPServer for the whole process)."""

    allow_reuse_address = True
    daemon_threads = True


class ReadReports:
    """A listener collecting ``(snapshot, table, index) -> [position, ...]`` from chunk readers."""

    def __init__(self, host: str | None = None):
        self.host = host or default_host()
        self.token = secrets.token_hex(16)
        self._lock = threading.Lock()
        self._reports: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
        owner = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                try:
                    message = json.loads(self.rfile.readline(1 << 20) or b"{}")
                except ValueError:
                    return
                if not isinstance(message, dict) or not secrets.compare_digest(str(message.get("token")), owner.token):
                    return
                owner._add(message)
                self.wfile.write(b"ok\n")

        bind = "127.0.0.1" if self.host.startswith("127.") or self.host == "localhost" else ""
        self._server = _Server((bind, 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="cdc-spark-reports", daemon=True)
        self._thread.start()

    @property
    def address(self) -> dict[str, Any]:
        """Where chunk readers send their reports (pickled into each chunk partition)."""
        return {"host": self.host, "port": self.port, "token": self.token}

    def _add(self, message: Mapping[str, Any]) -> None:
        key = (str(message["snapshot"]), str(message["table"]), int(message["index"]))
        with self._lock:
            self._reports.setdefault(key, []).append(dict(message["position"]))

    def reports(self, snapshot_id: str) -> dict[tuple[str, int], list[dict[str, Any]]]:
        """Every report for ``snapshot_id`` so far, by (table, chunk index)."""
        with self._lock:
            return {(t, i): list(v) for (s, t, i), v in self._reports.items() if s == snapshot_id}

    def close(self) -> None:
        """Stop listening."""
        self._server.shutdown()
        self._server.server_close()


def send_report(address: Mapping[str, Any], snapshot_id: str, table: str, index: int, position: dict[str, Any]) -> None:
    """Send one chunk read's position to the driver and wait for its acknowledgement."""
    message = {"token": address["token"], "snapshot": snapshot_id, "table": table, "index": index,
               "position": position}
    try:
        with socket.create_connection((address["host"], int(address["port"])), timeout=REPORT_TIMEOUT_S) as sock:
            sock.sendall(json.dumps(message).encode() + b"\n")
            reply = sock.makefile("rb").readline()
    except OSError as e:
        raise RuntimeError(f"cannot report the read of snapshot chunk {table}#{index} to the driver at "
                           f"{address['host']}:{address['port']} ({e}); set the chunkReportHost option to an "
                           "address of the driver that executors can reach") from e
    if reply.strip() != b"ok":
        raise RuntimeError(f"the driver did not acknowledge the read of snapshot chunk {table}#{index}")
