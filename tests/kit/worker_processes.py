"""What the tests of worker processes share: finding the forked workers, and file sinks that stop, fail or dawdle."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

from cdc_core.sinks.file import FileSink


def child_pids(pid: int) -> list[int]:
    """The children of process ``pid``, from each of its threads' ``/proc`` entry.

    A thread that ends while the directory is walked takes its entry with it: it has no children then.
    """
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out.extend(int(child) for child in (task / "children").read_text().split())
        except OSError:
            pass
    return out


def forked_children() -> list[int]:
    """This process's forked children (worker processes: the same command line as this process)."""
    me = Path("/proc/self/cmdline").read_bytes()
    out = []
    for pid in child_pids(os.getpid()):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes() == me:
                out.append(pid)
        except OSError:
            pass
    return out


def kill_a_worker(timeout: float = 60) -> None:
    """SIGKILL one of this process's forked workers, once one has started (fails if none does in ``timeout``)."""
    deadline = time.monotonic() + timeout
    while not (workers := forked_children()) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert workers, "no worker process started"
    os.kill(workers[0], signal.SIGKILL)


def records_in(batch: list) -> int:
    """How many records a sink's batch holds (a worker's block counts as its records)."""
    return sum(len(r) if r.__class__.__name__ == "RecordBlock" else 1 for r in batch)


class SlowSink(FileSink):
    """A file sink that takes its time, so the workers are still busy when the test acts."""

    def write(self, batch: list) -> None:
        time.sleep(0.05)
        super().write(batch)


class StoppingSink(FileSink):
    """A file sink that stops ``engine`` once it has written ``limit`` records (set both on the class)."""

    limit = 0
    engine: Any = None

    def write(self, batch: list) -> None:
        super().write(batch)
        type(self).limit -= records_in(batch)
        if type(self).limit <= 0 and type(self).engine is not None:
            type(self).engine.stop()


class FailingSink(FileSink):
    """A file sink that fails (as a crash would stop it) instead of writing once ``limit`` records are written."""

    limit = 0

    def write(self, batch: list) -> None:
        if type(self).limit <= 0:
            raise RuntimeError("the sink is down")
        super().write(batch)
        type(self).limit -= records_in(batch)
