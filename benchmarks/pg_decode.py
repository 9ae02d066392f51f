"""PostgreSQL streaming's per-record CPU without a server: pgoutput payloads through StreamReader, EventBuilder, JSON.

The payloads are what pgoutput sends for ``benchmarks/pg_streaming.py``'s backlog (one transaction of
single-row inserts into ``bench (id int, name text, amount numeric(12,2), qty bigint, created timestamptz)``),
built here in memory, handed to ``StreamReader.read`` in batches of up to ``MAX_MESSAGES_PER_READ`` as the
replication connection does. Each phase adds one step to the one before, so a step's cost is the difference:

- ``read``: StreamReader.read (pgoutput decoding, RawChanges with their source and offset),
- ``build``: then EventBuilder.build (converters, envelopes),
- ``json``: then JsonSerializer (schemas on, as in pg_streaming.py).

CPU time is ``time.process_time`` per record, best of ``--repeat`` (load-insensitive, unlike wall-clock rates).
``--instructions`` also counts instructions per record under callgrind (each phase minus ``setup``), which do
not depend on the machine's load; six runs under valgrind, several minutes on a quiet machine (on a loaded
one the interpreter's start under valgrind alone takes many minutes: compare ``--repeat``'s best instead,
alternating before and after). Usage:
``uv run python benchmarks/pg_decode.py [--records N] [--repeat K] [--instructions]``.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
from struct import pack
from types import SimpleNamespace

from cdc_core.config import Config
from cdc_core.engine import _tune_gc, _tune_malloc
from cdc_core.envelope import EventBuilder
from cdc_core.events import ChangeRecord
from cdc_core.relational import Table, TableId
from cdc_core.serializers.json import JsonSerializer
from cdc_postgres.pgoutput import PG_EPOCH_OFFSET_US
from cdc_postgres.replication import MAX_MESSAGES_PER_READ, XLogData
from cdc_postgres.source import SOURCE_SCHEMA
from cdc_postgres.streaming import ResumePoint, StreamReader
from cdc_postgres.types import TypeModes, column_for

OID = 16385
#: (name, type oid, typmod, nullable): pg_streaming.py's table.
COLUMNS = [
    ("id", 23, -1, False),
    ("name", 25, -1, True),
    ("amount", 1700, (12 << 16 | 2) + 4, True),
    ("qty", 20, -1, True),
    ("created", 1184, -1, True),
]


def table() -> Table:
    modes = TypeModes()
    cols = [column_for(n, oid, mod, nullable, modes, position=i + 1, relation=True)
            for i, (n, oid, mod, nullable) in enumerate(COLUMNS)]
    return Table(TableId(None, "public", "bench"), cols, ["id"])


def _tuple(values: list[str]) -> bytes:
    out = [pack(">H", len(values))]
    for v in values:
        b = v.encode()
        out.append(b"t" + pack(">I", len(b)) + b)
    return b"".join(out)


def messages(n: int) -> list[XLogData]:
    """BEGIN, ``n`` inserts, COMMIT, as XLogData frames with increasing LSNs."""
    lsn = 0x2000000
    commit_ts = 1_700_000_000_000_000 - PG_EPOCH_OFFSET_US
    final = lsn + 100 * (n + 2)
    out = [XLogData(lsn, lsn, 0, pack(">cQqI", b"B", final, commit_ts, 777))]
    for g in range(1, n + 1):
        lsn += 100
        secs = g
        created = f"2024-01-{1 + secs // 86400:02d} {secs // 3600 % 24:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}+00"
        amount = f"{g * 1.25:.2f}"
        row = _tuple([str(g), f"name-{g}", amount, str(g * 7), created])
        out.append(XLogData(lsn, lsn, 0, b"I" + pack(">I", OID) + b"N" + row))
    out.append(XLogData(final, final, 0, pack(">cBQQq", b"C", 0, final, final + 8, commit_ts)))
    return out


class _Repl:
    """The replication connection's part StreamReader uses, handing out pre-made frames."""

    def __init__(self, frames: list[XLogData]):
        self.batches = [frames[i:i + MAX_MESSAGES_PER_READ] for i in range(0, len(frames), MAX_MESSAGES_PER_READ)]
        self.server_wal_end = 0

    def read(self, timeout: float) -> list[XLogData]:
        return self.batches.pop(0) if self.batches else []


def setup(n: int):
    """The frames, a reader over them, the builder and serializer, warmed up on a small run."""
    _tune_malloc()
    _tune_gc()
    t = table()
    builder = EventBuilder(Config({"topic.prefix": "bench"}), SOURCE_SCHEMA, {"server": "bench"})
    serializer = JsonSerializer()  # schemas on, as pg_streaming.py's runs
    frames = messages(n)

    def reader(fr):
        return StreamReader(_Repl(fr), SimpleNamespace(), {OID: t}, "bench", "bench", ResumePoint(None),
                            logging.getLogger("bench"))

    warm = reader(messages(64))
    serializer.serialize([r for r in builder.build(warm.read(0)) if r.__class__ is ChangeRecord])
    return frames, reader, builder, serializer


def run(phase: str, frames, reader, builder, serializer) -> None:
    r = reader(frames)
    while True:
        batch = r.read(0)
        if not batch:
            break
        if phase == "read":
            del batch
            continue
        built = builder.build(batch)
        del batch
        if phase == "json":
            out = serializer.serialize([r for r in built if r.__class__ is ChangeRecord])
            del out
        del built


def timed(n: int, repeat: int) -> dict[str, float]:
    frames, reader, builder, serializer = setup(n)
    best = {}
    for phase in ("read", "build", "json"):
        for _ in range(repeat):
            gc.collect()
            t0 = time.process_time_ns()
            run(phase, frames, reader, builder, serializer)
            spent = (time.process_time_ns() - t0) / n
            best[phase] = min(best.get(phase, float("inf")), spent)
    return best


def instructions(phase: str, n: int) -> int:
    total = 0
    for step, sign in ((phase, 1), ("setup", -1)):
        with tempfile.NamedTemporaryFile(suffix=".cg") as f:
            subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={f.name}", sys.executable,
                            __file__, "--phase", step, "--records", str(n)], check=True, capture_output=True)
            text = open(f.name).read()
        total += sign * int(re.search(r"^summary: (\d+)", text, re.M).group(1))
    return total // n


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--records", type=int, default=100_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--instructions", action="store_true")
    p.add_argument("--phase", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.phase:
        parts = setup(a.records)
        if a.phase != "setup":
            run(a.phase, *parts)
        return
    load = os.getloadavg()
    best = timed(a.records, a.repeat)
    print(f"{a.records} inserts, CPU µs/record (best of {a.repeat}), load {load[0]:.2f} {load[1]:.2f}:")
    prev = 0.0
    for phase, cpu in best.items():
        line = f"  {phase:6s} {cpu / 1000:6.2f} cumulative, {(cpu - prev) / 1000:6.2f} this step"
        if a.instructions:
            line += f"  {instructions(phase, min(a.records, 20000)):8d} instructions/record cumulative"
        print(line)
        prev = cpu


if __name__ == "__main__":
    main()
