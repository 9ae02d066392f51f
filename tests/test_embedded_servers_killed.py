"""A process killed with SIGKILL does not leave its throwaway PostgreSQL or MariaDB server running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

_CHILD = """
import sys, time
from {module} import {cls}
server = {cls}().start()
print(server.port, {directory}, flush=True)
time.sleep(600)
"""

CASES = {
    # module, class, the server's temporary directory, its pid file in that directory
    "postgres": ("cdc_postgres.embedded", "EmbeddedPostgres", "server.data_dir.parent",
                 lambda d: d / "data" / "postmaster.pid"),
    "mariadb": ("cdc_mysql.embedded", "EmbeddedMariaDB", "server.base_dir", lambda d: d / "mariadb.pid"),
}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


@pytest.mark.parametrize("kind", sorted(CASES))
def test_sigkill_of_the_starting_process_stops_the_server_and_removes_its_files(kind):
    """The server a killed test run (timeout, OOM, kill -9) started is stopped and its directory removed."""
    module, cls, directory, pid_file = CASES[kind]
    child = subprocess.Popen([sys.executable, "-c", _CHILD.format(module=module, cls=cls, directory=directory)],
                             stdout=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline().split()
        assert line, f"the child could not start an embedded {kind} server"
        base_dir = Path(line[1])
        server_pid = int(pid_file(base_dir).read_text().splitlines()[0])
        assert _alive(server_pid)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    deadline = time.monotonic() + 60
    while (_alive(server_pid) or base_dir.exists()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(server_pid), f"the {kind} server (pid {server_pid}) outlived the killed process"
    assert not base_dir.exists(), f"{base_dir} was left behind"


@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_server_that_cannot_start_keeps_its_log_and_names_it(kind, tmp_path, monkeypatch):
    """A start-up failure removes the temporary directory but keeps the server's log where the error says."""
    import importlib

    module, cls, _, _ = CASES[kind]
    monkeypatch.setenv("CDC_KEEP_SERVER_LOGS", str(tmp_path))
    server_class = getattr(importlib.import_module(module), cls)
    bad = {"postgres": {"shared_buffers": "no-such-size"}, "mariadb": {"no-such-option": "1"}}[kind]
    server = server_class(settings=bad, startup_timeout=30)
    with pytest.raises(RuntimeError, match="the whole server log is kept at") as failure:
        server.start()
    kept = Path(str(failure.value).rsplit("kept at ", 1)[1].rstrip(")"))
    assert kept.parent == tmp_path and kept.read_text().strip(), "the kept log is empty"
    server.stop()
    assert not server.running
