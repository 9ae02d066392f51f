"""``cdc run`` killed with -9 and restarted on a change-table stand-in (Db2, SQL Server): it resumes exactly."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cdc_core.stores.file_offsets import read_offsets_file
from cdc_process import CdcProcess, write_properties


class StandInProcess(CdcProcess):
    """``cdc run`` through a stand-in's CLI module (the same CLI, connections routed to the stand-in)."""

    def __init__(self, module: str, config: Path, workdir: Path, *options: str):
        super().__init__(config, workdir, *options)
        self.module = module

    def start(self) -> StandInProcess:
        """Start the process."""
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", self.module, *self.options, "run", str(self.config)],
            stdout=self._log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        return self


def server_properties(standin: Any, work: Path, **extra: Any) -> Path:
    """The server's properties file: the file sink and file offsets under ``work``, the stand-in's connector."""
    props = {"debezium.sink.type": "file", "debezium.sink.file.dir": str(work / "events"),
             "debezium.source.offset.storage.file.filename": str(work / "offsets.json"),
             "debezium.source.offset.flush.interval.ms": 0}
    props.update({f"debezium.source.{k}": v for k, v in standin.properties(**extra).items()})
    return write_properties(work / "app.properties", props)


def values(lines: list[dict]) -> list[dict]:
    """The value payloads of the file sink's lines, tombstones left out."""
    return [line["value"]["payload"] for line in lines if line.get("value") and line["value"].get("payload")]


@dataclass
class KilledAndRestarted:
    """What a killed and restarted ``cdc run`` delivered."""

    #: The streamed (not snapshot) values, in delivery order, both processes.
    streamed: list[dict]
    #: Those the restarted process delivered.
    after_restart: list[dict]
    #: The distinct positions, in order; ``before``: those at or before the offset stored at the kill.
    ordered: list[tuple]
    before: list[tuple]
    #: The rows inserted, the snapshot's included.
    inserted: int


def kill_and_restart(standin: Any, work: Path, cli: str, topic: str, insert: Callable[[str], Any],
                     partition: Callable[[dict], bool], keys: tuple[str, ...],
                     last_changes: Callable[[], int]) -> KilledAndRestarted:
    """Kill -9 after a random number of changes, restart, and check every change arrives once past the offset.

    ``insert(rows)`` inserts ``('first', 'last', 'email'), ...``; ``partition``: the stored offset's; ``keys``: the
    source fields of a position; ``last_changes()`` makes more changes after the restart and returns their count.
    """
    procs: list[StandInProcess] = []
    try:
        config = server_properties(standin, work)
        proc = StandInProcess(cli, config, work).start()
        procs.append(proc)
        proc.wait_events(topic, 4)
        # Transactions of 1 to 4 rows.
        inserted = 4
        for n in range(40):
            insert(", ".join(f"('f{n}_{i}', 'l', 'e{n}_{i}@x')" for i in range(n % 4 + 1)))
            inserted += n % 4 + 1
            if n == 20:
                proc.wait_until(lambda: len(proc.events(topic)) > 20 + random.randint(0, 10), what="some changes")
                proc.kill()
                before_kill = proc.events(topic)
                stored = next(o for p, o in read_offsets_file(work / "offsets.json").values() if partition(p))
                proc = StandInProcess(cli, config, work).start()
                procs.append(proc)
        total = inserted + last_changes()
        standin.wait_captured()

        def position(value: dict) -> tuple:
            return _comparable(value["source"][k] for k in keys)

        proc.wait_until(lambda: len({position(v) for v in values(proc.events(topic)) if v["op"] != "r"}) >= total - 4,
                        what="every change")
        assert proc.terminate() == 0
    finally:
        for p in procs:  # a failed assertion must not leave a cdc process behind
            if p.proc is not None and p.proc.poll() is None:
                p.kill()
    streamed = [v for v in values(proc.events(topic)) if v["op"] != "r"]
    after_restart = streamed[len([v for v in values(before_kill) if v["op"] != "r"]):]
    stored_position = _comparable([stored[keys[0]], *(stored.get(k) for k in keys[1:])])
    # The restarted connector's first event is the very next change after the stored offset.
    assert position(after_restart[0]) > stored_position
    ordered = sorted({position(v) for v in streamed})
    before = [p for p in ordered if p <= stored_position]
    # (changes delivered after the stored offset but before the kill come again: at least once)
    assert position(after_restart[0]) == ordered[len(before)]
    # Nothing lost, and nothing at or before the stored offset delivered twice.
    assert len(ordered) == total - 4
    positions = [position(v) for v in streamed]
    assert all(positions.count(p) == 1 for p in before)
    return KilledAndRestarted(streamed, after_restart, ordered, before, inserted)


def _comparable(parts: Any) -> tuple:
    """A position whose parts compare in log order: an LSN written ``NULL`` (a snapshot's offset: no change of that
    commit processed yet) comes before every LSN, where the text ``NULL`` would sort after ``0000...``."""
    return tuple("" if p == "NULL" else p for p in parts)
