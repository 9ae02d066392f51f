"""Kit scenario 4, for every connector: corrupt or truncated offset and history files.

A damaged state file must stop ``cdc run`` with one clear error naming the file and what to do --
never a traceback, never a hang, never a silent new snapshot or a silent skip (nothing written to
the sink). Put back, the good files resume where they left off.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from kit import ITEMS, Workdir, Writer, start_cdc, wait_replayed


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _first_offset(path: Path, change: Callable[[dict], None]) -> None:
    doc = orjson.loads(path.read_bytes())
    change(doc["offsets"][0]["offset"])
    path.write_bytes(orjson.dumps(doc))


def _garble_positions(offset: dict) -> None:
    for key, value in list(offset.items()):
        if isinstance(value, (int, str)) and not isinstance(value, bool):
            offset[key] = "garbage" if isinstance(value, int) else -1


def _history_lines(path: Path, change: Callable[[list[bytes]], list[bytes]]) -> None:
    path.write_bytes(b"".join(line + b"\n" for line in change(path.read_bytes().splitlines())))


#: name -> (which file, what is done to it)
DAMAGE: dict[str, tuple[str, Callable[[Path], None]]] = {
    "offsets-empty": ("offsets", lambda p: p.write_bytes(b"")),
    "offsets-truncated": ("offsets", _truncate),
    "offsets-binary": ("offsets", lambda p: p.write_bytes(bytes(range(256)) * 4)),
    "offsets-not-cdc": ("offsets", lambda p: p.write_bytes(b'{"hello": "world"}')),
    "offsets-newer-version": ("offsets", lambda p: p.write_bytes(orjson.dumps({**orjson.loads(p.read_bytes()), "version": 99}))),
    "offsets-empty-offset": ("offsets", lambda p: _first_offset(p, dict.clear)),
    "offsets-garbage-position": ("offsets", lambda p: _first_offset(p, _garble_positions)),
    "history-empty": ("history", lambda p: p.write_bytes(b"")),
    "history-missing": ("history", lambda p: p.unlink()),
    "history-truncated-record": ("history", lambda p: p.write_bytes(p.read_bytes()[:-20])),
    "history-garbage-line": ("history", lambda p: _history_lines(p, lambda ls: ls[:1] + [b"\x00\xffnot json"] + ls[1:])),
}


@pytest.fixture
def stopped_run(connector, tmp_path):
    """A connector that ran, captured a snapshot and some changes, and stopped cleanly: (fixture, workdir)."""
    connector.create_table(ITEMS)
    writer = Writer(connector, seed=4)
    writer.seed_rows(50)
    work = Workdir(tmp_path / "run")
    work.root.mkdir()
    cdc = start_cdc(connector, work)
    try:
        wait_replayed(cdc, connector, ITEMS)
        writer.run(20)
        wait_replayed(cdc, connector, ITEMS)
    finally:
        assert cdc.terminate() == 0, cdc.log()
    writer.run(10)  # changes the next run has to stream
    return connector, work


def _run_to_exit(work: Workdir, timeout: float = 45.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cdc_core.cli", "run", str(work.config)], capture_output=True,
                          text=True, timeout=timeout)


def test_damaged_state_files_stop_the_start_clearly(stopped_run, tmp_path):
    """Every damage: a non-zero exit, one line naming the file and what to do, nothing sent to the sink."""
    fx, work = stopped_run
    good = tmp_path / "good"
    shutil.copytree(work.root, good)
    failures = []
    for name, (which, damage) in DAMAGE.items():
        if which == "history" and not fx.has_history:
            continue
        shutil.rmtree(work.root)
        shutil.copytree(good, work.root)
        path = work.offsets if which == "offsets" else work.history
        sizes = {p.name: p.stat().st_size for p in work.events.iterdir()}
        damage(path)
        try:
            result = _run_to_exit(work)
        except subprocess.TimeoutExpired:
            failures.append(f"{name}: cdc run ran on (silently) for 45 s")
            continue
        after = {p.name: p.stat().st_size for p in work.events.iterdir()}
        output = result.stdout + result.stderr
        errors = [line for line in output.splitlines() if "ERROR" in line or line.startswith("cdc:")]
        problems = []
        if result.returncode == 0:
            problems.append("exit code 0")
        if "Traceback" in output:
            problems.append("a traceback")
        if str(path) not in output:
            problems.append(f"no mention of {path}")
        if after != sizes:
            problems.append(f"events written to the sink ({sizes} -> {after})")
        if problems:
            failures.append(f"{name}: {', '.join(problems)}; said: {errors[-3:] or output[-500:]!r}")
    assert failures == [], "\n".join(failures)
    # Put back, the good files resume: the 10 changes since the stop, no new snapshot.
    shutil.rmtree(work.root)
    shutil.copytree(good, work.root)
    cdc = start_cdc(fx, work)
    try:
        result = wait_replayed(cdc, fx, ITEMS)
    finally:
        assert cdc.terminate() == 0, cdc.log()
    assert result.snapshots == 1 and result.problems == []
