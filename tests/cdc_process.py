"""Running ``cdc run`` as a real subprocess and reading what its file sink wrote."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson


def write_properties(path: Path, props: dict[str, Any]) -> Path:
    """Write a .properties file (one ``key=value`` per line)."""
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()), encoding="utf-8")
    return path


def write_java_properties(path: Path, props: dict[str, Any]) -> Path:
    """Write a .properties file escaping values as Java's Properties.store does (UTF-8 text kept as is)."""
    def escape(value: Any) -> str:
        out = str(value).replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
        return "\\" + out if out.startswith(" ") else out

    path.write_text("".join(f"{k}={escape(v)}\n" for k, v in props.items()), encoding="utf-8")
    return path


def server_properties(pg, dbname: str, workdir: Path, **source: Any) -> dict[str, Any]:
    """A Debezium Server configuration: a PostgreSQL source, the file sink, file offsets."""
    props: dict[str, Any] = {
        "debezium.sink.type": "file",
        "debezium.sink.file.dir": str(workdir / "events"),
        "debezium.source.connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "debezium.source.database.hostname": pg.host,
        "debezium.source.database.port": pg.port,
        "debezium.source.database.user": pg.user,
        "debezium.source.database.dbname": dbname,
        "debezium.source.topic.prefix": "dbserver1",
        "debezium.source.offset.storage.file.filename": str(workdir / "offsets.json"),
        "debezium.source.offset.flush.interval.ms": 0,
        "debezium.source.poll.interval.ms": 100,
    }
    props.update({f"debezium.source.{k}": v for k, v in source.items()})
    return props


class CdcProcess:
    """``python -m cdc_core.cli run CONFIG`` in the background, with its stderr kept in a file."""

    def __init__(self, config: Path, workdir: Path, *options: str):
        self.options = options  # options of the cdc command before ``run`` (e.g. ``--log-level DEBUG``)
        self.config = config
        self.workdir = workdir
        self.events_dir = workdir / "events"
        self.log_path = workdir / f"cdc-{time.monotonic_ns()}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> CdcProcess:
        """Start the process."""
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cdc_core.cli", *self.options, "run", str(self.config)],
            stdout=self._log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        return self

    def log(self) -> str:
        """Everything the process printed so far."""
        return self.log_path.read_text(errors="replace")

    def events(self, topic: str) -> list[dict[str, Any]]:
        """Every complete line of ``<topic>.jsonl`` so far, parsed."""
        path = self.events_dir / f"{topic}.jsonl"
        if not path.exists():
            return []
        data = path.read_bytes()
        return [orjson.loads(line) for line in data.split(b"\n")[:-1] if line]

    def wait_until(self, condition: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
        """Wait for ``condition``; fail with the process log if it does not come true or the process dies."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return
            if self.proc is not None and self.proc.poll() is not None:
                if condition():
                    return
                raise AssertionError(f"cdc exited with {self.proc.returncode} before {what}:\n{self.log()}")
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}:\n{self.log()}")

    def wait_events(self, topic: str, n: int, timeout: float = 30.0) -> list[dict[str, Any]]:
        """Wait until ``topic`` has at least ``n`` lines; return them."""
        self.wait_until(lambda: len(self.events(topic)) >= n, timeout, f"{n} events on {topic}")
        return self.events(topic)

    def terminate(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait; return the exit code."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout)
        self._log.close()
        return code

    def kill(self) -> None:
        """SIGKILL: no chance to drain or commit."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(10)
        self._log.close()

    def wait_exit(self, timeout: float = 60.0) -> int:
        """Wait for the process to end by itself; return the exit code."""
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"cdc did not exit within {timeout}s:\n{self.log()}") from None
        self._log.close()
        return code


def run_cli(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run ``cdc ARGS`` to completion."""
    return subprocess.run([sys.executable, "-m", "cdc_core.cli", *args], capture_output=True, text=True, timeout=timeout)


def matches(expected: Any, actual: Any, path: str = "$") -> list[str]:
    """Differences between ``actual`` and ``expected``, where ``"<int>"``, ``"<str>"`` and ``"<any>"`` match any such value."""
    if expected == "<any>":
        return []
    if expected == "<int>":
        return [] if isinstance(actual, int) and not isinstance(actual, bool) else [f"{path}: expected an int, got {actual!r}"]
    if expected == "<str>":
        return [] if isinstance(actual, str) else [f"{path}: expected a string, got {actual!r}"]
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected an object, got {actual!r}"]
        out = []
        if list(expected) != list(actual):
            out.append(f"{path}: keys {list(actual)} != expected {list(expected)}")
        for k in expected:
            if k in actual:
                out += matches(expected[k], actual[k], f"{path}.{k}")
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{path}: expected {expected!r}, got {actual!r}"]
        out = []
        for i, (e, a) in enumerate(zip(expected, actual)):
            out += matches(e, a, f"{path}[{i}]")
        return out
    return [] if expected == actual and type(expected) is type(actual) else [f"{path}: expected {expected!r}, got {actual!r}"]
