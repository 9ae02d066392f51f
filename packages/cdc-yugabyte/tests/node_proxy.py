"""A YugabyteDB "node" stand-in: a TCP proxy to the throwaway PostgreSQL, in its own process.

Its own process because libpq's blocking connect (the replication connection) holds the GIL, so a
proxy thread in the test process could not answer it. Killing the process drops every connection
through it and refuses new ones, as a dead node does.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_TESTS = Path(__file__).resolve().parents[3] / "tests"
_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[3])
from tcp_proxy import TcpProxy
proxy = TcpProxy(sys.argv[1], int(sys.argv[2]))
print(proxy.port, flush=True)
sys.stdin.read()  # until the test closes it (or dies)
"""


class NodeProxy:
    """Forwards ``127.0.0.1:<port>`` to ``host:port`` until ``kill()``."""

    def __init__(self, host: str, port: int):
        self._proc = subprocess.Popen([sys.executable, "-c", _SCRIPT, host, str(port), str(_TESTS)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.port = int(self._proc.stdout.readline())

    def kill(self) -> None:
        """The node dies: its connections break, new ones are refused."""
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait(10)
