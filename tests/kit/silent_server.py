"""A fixture: a TCP port whose listener completes the handshake and never says a word (connect timeouts)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP port whose listener completes the handshake (kernel backlog) and never says a word."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    yield sock.getsockname()[1]
    sock.close()
