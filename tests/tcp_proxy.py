"""A TCP proxy on 127.0.0.1 that can turn into a black hole: bytes stop in both directions, nothing is closed."""

from __future__ import annotations

import select
import socket
import threading


class TcpProxy:
    """Forwards ``127.0.0.1:<port>`` to ``target``; ``blackhole()`` stops every byte (and new connections) until ``heal()``."""

    def __init__(self, target_host: str, target_port: int):
        self.target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._open = threading.Event()
        self._open.set()
        self._closed = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, name="tcp-proxy-accept", daemon=True).start()

    def blackhole(self) -> None:
        """Stop forwarding: connections stay open, no byte passes, new connections hang."""
        self._open.clear()

    def heal(self) -> None:
        """Forward again."""
        self._open.set()

    def drop(self) -> int:
        """Reset every open connection (as a network failure would); keep accepting new ones. Return how many."""
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for s in sockets:
            try:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # RST
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        return len(sockets) // 2

    def close(self) -> None:
        """Close the listener and every connection."""
        self._closed = True
        self._open.set()
        self._listener.close()
        with self._lock:
            for s in self._sockets:
                try:
                    s.close()
                except OSError:
                    pass

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), name="tcp-proxy-conn", daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        self._open.wait()  # a connection made during a black hole gets nothing, not even the server's greeting
        if self._closed:
            client.close()
            return
        try:
            server = socket.create_connection(self.target, timeout=10)
        except OSError:
            client.close()
            return
        with self._lock:
            self._sockets += [client, server]
        peers = {client: server, server: client}
        try:
            while not self._closed:
                self._open.wait()
                readable, _, _ = select.select(list(peers), [], [], 0.1)
                if not self._open.is_set():
                    continue  # turned into a black hole while waiting: read nothing
                for s in readable:
                    data = s.recv(65536)
                    if not data:
                        return
                    peers[s].sendall(data)
        except OSError:
            return
        finally:
            client.close()
            server.close()
