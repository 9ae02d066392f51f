"""Scenario 10 (issue 11): a distinctive password never appears in anything cdc writes or shows."""

from __future__ import annotations

import socket
import urllib.request
from pathlib import Path

from cdc_process import CdcProcess, run_cli

#: Distinctive enough that any leak, whole or in a recognizable piece, is found by a grep.
SECRET = "Pw7hQ2-zebra-SECRET-kx9"
PIECES = (SECRET, "zebra-SECRET", "Pw7hQ2", "kx9")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def assert_no_secret(where: str, text: str | bytes) -> None:
    """Fail naming ``where`` if any piece of the secret is in ``text``."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    found = [p for p in PIECES if p in text]
    assert not found, f"the password (or a piece of it: {found}) appears in {where}"


def process_title(pid: int) -> bytes:
    """What ``ps`` shows for ``pid``: its command line and its name."""
    proc = Path(f"/proc/{pid}")
    return (proc / "cmdline").read_bytes() + b"\n" + (proc / "comm").read_bytes()


def check_running_process(cdc: CdcProcess, metrics_port: int) -> None:
    """The process title and the metrics endpoint of a running ``cdc run``."""
    assert cdc.proc is not None
    assert_no_secret("the process title", process_title(cdc.proc.pid))
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as response:
        body = response.read()
    assert b"cdc" in body or b"debezium" in body, body[:200]
    assert_no_secret("the metrics endpoint", body)


def check_files_and_commands(workdir: Path, config: Path) -> None:
    """Every file under ``workdir`` but the configuration, and ``cdc validate`` / ``cdc offsets show``."""
    for path in sorted(workdir.rglob("*")):
        if path.is_file() and path != config:
            assert_no_secret(str(path), path.read_bytes())
    for command in (["validate"], ["offsets", "show"], ["--log-level", "DEBUG", "validate"]):
        done = run_cli(*command, str(config))
        assert done.returncode == 0, done.stderr
        assert_no_secret(f"`cdc {' '.join(command)}`", done.stdout + done.stderr)
