"""``cdc run`` with the Db2 connector on the stand-in: kill -9 and restart resume at the exact change."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

from cdc_core.stores.file_offsets import read_offsets_file
from cdc_process import CdcProcess, write_properties
from cdc_db2.standin.testing import inventory, standin  # noqa: F401  (fixtures)

INSERT = 'INSERT INTO "MYSCHEMA"."CUSTOMERS" ("FIRST_NAME", "LAST_NAME", "EMAIL") VALUES '


class StandInProcess(CdcProcess):
    """``cdc run`` through ``cdc_db2.standin.cli`` (the same CLI, connections routed to the stand-in)."""

    def start(self) -> StandInProcess:
        """Start the process."""
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cdc_db2.standin.cli", *self.options, "run", str(self.config)],
            stdout=self._log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        return self


def _server_properties(standin, work: Path, **extra) -> Path:
    props = {"debezium.sink.type": "file", "debezium.sink.file.dir": str(work / "events"),
             "debezium.source.offset.storage.file.filename": str(work / "offsets.json"),
             "debezium.source.offset.flush.interval.ms": 0}
    props.update({f"debezium.source.{k}": v for k, v in standin.properties(**extra).items()})
    return write_properties(work / "app.properties", props)


def _values(lines: list[dict]) -> list[dict]:
    """The value payloads of the file sink's lines, tombstones left out."""
    return [line["value"]["payload"] for line in lines if line.get("value") and line["value"].get("payload")]


def _position(value: dict) -> tuple:
    s = value["source"]
    return s["commit_lsn"], s["change_lsn"]


def test_kill_9_and_restart_resume_at_the_exact_change(inventory, tmp_path):
    procs: list[StandInProcess] = []
    try:
        _kill_and_restart(inventory, tmp_path, procs)
    finally:
        for p in procs:  # a failed assertion must not leave a cdc process behind
            if p.proc is not None and p.proc.poll() is None:
                p.kill()


def _kill_and_restart(inventory, tmp_path, procs) -> None:
    """Kill -9 after a random number of changes, restart, and check every change arrives once past the offset."""
    config = _server_properties(inventory, tmp_path)
    topic = "mydatabase.MYSCHEMA.CUSTOMERS"
    proc = StandInProcess(config, tmp_path).start()
    procs.append(proc)
    proc.wait_events(topic, 4)
    expected = 4
    for n in range(40):
        rows = ", ".join(f"('f{n}_{i}', 'l', 'e{n}_{i}@x')" for i in range(n % 4 + 1))
        inventory.execute(INSERT + rows)
        expected += n % 4 + 1
        if n == 20:
            proc.wait_until(lambda: len(proc.events(topic)) > 20 + random.randint(0, 10), what="some changes")
            proc.kill()
            before_kill = proc.events(topic)
            stored = next(o for p, o in read_offsets_file(tmp_path / "offsets.json").values()
                          if p.get("server") == "mydatabase")
            proc = StandInProcess(config, tmp_path).start()
            procs.append(proc)
    inventory.execute('UPDATE "MYSCHEMA"."CUSTOMERS" SET "EMAIL" = \'changed@x\' WHERE "ID" = 1002')
    inventory.wait_captured()
    total = expected + 1  # and the update
    proc.wait_until(lambda: len({_position(v) for v in _values(proc.events(topic)) if v["op"] != "r"}) >= total - 4,
                    what="every change")
    assert proc.terminate() == 0
    streamed = [v for v in _values(proc.events(topic)) if v["op"] != "r"]
    after_restart = streamed[len([v for v in _values(before_kill) if v["op"] != "r"]):]
    stored_position = (stored["commit_lsn"], stored.get("change_lsn"))
    # The restarted connector's first event is the very next change after the stored offset.
    assert _position(after_restart[0]) > stored_position
    ordered = sorted({_position(v) for v in streamed})
    before = [p for p in ordered if p <= stored_position]
    # (changes delivered after the stored offset but before the kill come again: at least once)
    assert _position(after_restart[0]) == ordered[len(before)]
    # Nothing lost, and nothing at or before the stored offset delivered twice.
    assert len(ordered) == total - 4
    positions = [_position(v) for v in streamed]
    assert all(positions.count(p) == 1 for p in before)
    assert len({v["after"]["ID"] for v in streamed if v["op"] == "c"}) == expected - 4
