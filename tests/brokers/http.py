"""A small real HTTP server in the test process: records every request, and can be told to fail, stall or refuse."""

from __future__ import annotations

import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson


@dataclass
class Request:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    status: int = 0


@dataclass
class Behaviour:
    """What the next requests get: queued statuses first, then ``status``; ``stall_s`` delays each answer."""

    status: int = 200
    queued: deque[int] = field(default_factory=deque)
    stall_s: float = 0.0


class RecordingHttpServer:
    """ThreadingHTTPServer on a free port of 127.0.0.1; ``received`` holds the requests answered 2xx.

    ``fail_next(500, 500, 429)`` answers the next three requests so; ``answer(401)`` answers every
    request so from now on; ``stall(s)`` holds each answer. ``/auth/authenticate`` and
    ``/auth/refreshToken`` speak Debezium Server's JWT protocol (user ``jwt_user``/``jwt_password``).
    """

    def __init__(self, jwt_user: str = "", jwt_password: str = ""):
        self.behaviour = Behaviour()
        self.requests: list[Request] = []
        self.jwt_user, self.jwt_password = jwt_user, jwt_password
        self.tokens: list[str] = []
        self._lock = threading.Lock()
        self.connections = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # Headers and body go out in two writes: without this, Nagle holds the body for the client's
                # delayed ACK (40 ms a request).
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with server._lock:
                    server.connections += 1

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                request = Request("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                if self.path.endswith(("/auth/authenticate", "/auth/refreshToken")):
                    self._jwt(request)
                    return
                with server._lock:
                    b = server.behaviour
                    status = b.queued.popleft() if b.queued else b.status
                    stall = b.stall_s
                    request.status = status
                    server.requests.append(request)
                if stall:
                    time.sleep(stall)
                self._answer(status, b"{}" if status < 300 else b'{"error":"test"}')

            def _jwt(self, request: Request) -> None:
                doc = orjson.loads(request.body or b"{}")
                ok = (doc.get("username") == server.jwt_user and doc.get("password") == server.jwt_password) \
                    or doc.get("jwt_refresh_token") in server.tokens
                if not ok:
                    self._answer(401, b'{"error":"bad credentials"}')
                    return
                token = f"token-{len(server.tokens)}"
                server.tokens.append(token)
                self._answer(200, orjson.dumps({"expires_in": 3_600_000, "jwt": token,
                                                "jwt_refresh_token": token, "refresh_token_expires_in": 86_400_000}))

            def _answer(self, status: int, body: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a stalled answer)
                    self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="test-http", daemon=True)

    @property
    def url(self) -> str:
        """The URL to POST to."""
        return f"http://127.0.0.1:{self.port}/events"

    @property
    def received(self) -> list[Request]:
        """The requests answered 2xx, in arrival order."""
        with self._lock:
            return [r for r in self.requests if 200 <= r.status < 300]

    def fail_next(self, *statuses: int) -> None:
        """Answer the next requests with these statuses."""
        with self._lock:
            self.behaviour.queued.extend(statuses)

    def answer(self, status: int) -> None:
        """Answer every request with ``status`` from now on."""
        with self._lock:
            self.behaviour.status = status

    def stall(self, seconds: float) -> None:
        """Hold each answer ``seconds``."""
        with self._lock:
            self.behaviour.stall_s = seconds

    def start(self) -> RecordingHttpServer:
        """Serve in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> RecordingHttpServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
