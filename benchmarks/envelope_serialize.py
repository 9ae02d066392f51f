"""Core CPU per record: EventBuilder.build (envelope, converters) and JsonSerializer.serialize, no database.

A PostgreSQL-typed table (int4 key, int8, text, numeric(10,2), timestamp, timestamptz, bool and
a nullable text that is NULL in half the rows) gets streamed inserts (runs, as a transaction of
inserts arrives) and updates with before images (REPLICA IDENTITY FULL), in batches of 512, with
the columns' real pgoutput text converters (``cdc_postgres.types.column_for``) and PostgreSQL's
source block. Prints CPU ns per record (``time.process_time``, so other processes' load counts
little) for building, serializing with schemas and without, best of ``--repeat``.

``--phase setup|build|json|bare --records N`` sets up N records and runs the steps up to that
phase once (no timing), for an instruction count under callgrind; a step's count per record is
the difference of two runs divided by N (build: build - setup; json and bare: json/bare - build)::

    for p in build json; do valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.$p \\
        uv run python benchmarks/envelope_serialize.py --phase $p --records 10240; done
    # json instructions/record = (summary of cg.json - summary of cg.build) / 10240

``--instructions`` does exactly that for every phase (needs valgrind; about a minute).
Usage: ``uv run python benchmarks/envelope_serialize.py [--records N] [--repeat K] [--instructions]``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from typing import Any

from cdc_core.config import Config
from cdc_core.engine import _tune_gc, _tune_malloc
from cdc_core.envelope import EventBuilder
from cdc_core.events import ChangeRecord, RawChange
from cdc_core.relational import Table, TableId
from cdc_core.serializers.json import JsonSerializer
from cdc_postgres.source import SOURCE_SCHEMA, sequence, source_block
from cdc_postgres.types import TypeModes, column_for

BATCH = 512
#: (name, type oid, typmod, nullable)
COLUMNS = [
    ("id", 23, -1, False),
    ("big", 20, -1, False),
    ("name", 25, -1, True),
    ("amount", 1700, (10 << 16 | 2) + 4, True),
    ("created", 1114, -1, True),
    ("created_tz", 1184, -1, True),
    ("flag", 16, -1, True),
    ("note", 25, -1, True),
]


def table() -> Table:
    modes = TypeModes()
    cols = [column_for(n, oid, mod, nullable, modes, position=i + 1) for i, (n, oid, mod, nullable) in enumerate(COLUMNS)]
    return Table(TableId("bench", "public", "orders"), cols, ["id"])


def raw_row(i: int, bump: int = 0) -> tuple[Any, ...]:
    """A pgoutput text tuple."""
    return (str(i), str(i * 7919 + bump), f"customer-{i}", f"{i % 100000}.{i % 100:02d}",
            f"2024-01-{1 + i % 28:02d} {i % 24:02d}:{i % 60:02d}:{i % 60:02d}.{i % 1000000:06d}",
            f"2024-01-{1 + i % 28:02d} {i % 24:02d}:{i % 60:02d}:{i % 60:02d}.{i % 1000:03d}+00",
            "t" if i % 2 else "f", None if i % 2 else f"note {i}")


def changes(t: Table, n: int) -> list[list[RawChange]]:
    """Batches: alternately a run of inserts and a run of updates (one transaction each)."""
    out: list[list[RawChange]] = []
    lsn = 0x1000000
    for start in range(0, n, BATCH):
        count = min(BATCH, n - start)
        update = (start // BATCH) % 2 == 1
        tx = 1000 + start
        batch = []
        for i in range(start, start + count):
            lsn += 120
            src = source_block("bench", "postgres", 1_700_000_000_000_000 + i, "false", "public", "orders",
                               tx, lsn, sequence(lsn - 120, lsn))
            offset = {"lsn": lsn, "txId": tx, "ts_usec": 1_700_000_000_000_000 + i}
            if update:
                batch.append(RawChange(t, "u", raw_row(i), raw_row(i, 1), src, offset, str(tx)))
            else:
                batch.append(RawChange(t, "c", None, raw_row(i), src, offset, str(tx)))
        out.append(batch)
    return out


def setup(n: int) -> tuple[EventBuilder, list[list[RawChange]], list[list[Any]], JsonSerializer, JsonSerializer]:
    """The builder, the batches of raw changes, the first batch built, and both serializers, all warmed up."""
    _tune_malloc()  # as the engine does before its first batch
    _tune_gc()
    builder = EventBuilder(Config({"topic.prefix": "bench"}), SOURCE_SCHEMA, {"server": "bench"})
    batches = changes(table(), n)
    built = [builder.build(b) for b in batches[:1]]  # compile the table's functions and schema JSON once
    with_schemas, bare = JsonSerializer(True, True), JsonSerializer(False, False)
    for serializer in (with_schemas, bare) if built else ():
        serializer.serialize([r for r in built[0] if isinstance(r, ChangeRecord)])
    return builder, batches, built, with_schemas, bare


def run_phase(phase: str, n: int) -> None:
    """One phase over ``n`` records, untimed (for callgrind)."""
    builder, batches, _, with_schemas, bare = setup(n)
    if phase == "setup":
        return
    built = [builder.build(b) for b in batches]
    if phase == "json":
        for b in built:
            with_schemas.serialize(b)
    elif phase == "bare":
        for b in built:
            bare.serialize(b)


def timed(n: int, repeat: int) -> dict[str, float]:
    """Batch by batch, as the engine goes (build, serialize, drop), each step's CPU summed; best of ``repeat``."""
    builder, batches, _, with_schemas, bare = setup(n)
    best = {"build": float("inf"), "json": float("inf"), "bare": float("inf")}
    clock = time.process_time_ns
    size = 0
    for _ in range(repeat):
        spent = dict.fromkeys(best, 0)
        size = 0
        for b in batches:
            t0 = clock()
            built = builder.build(b)
            t1 = clock()
            out = with_schemas.serialize(built)
            t2 = clock()
            bare.serialize(built)
            t3 = clock()
            spent["build"] += t1 - t0
            spent["json"] += t2 - t1
            spent["bare"] += t3 - t2
            size += sum(len(r.value) for r in out)
            del built, out
        for k, v in spent.items():
            best[k] = min(best[k], v / n)
    print(f"records {n}, value bytes/record with schemas {size / n:.0f}")
    return best


#: The phase each phase's count is taken relative to (the same work minus the measured step).
_BASELINE = {"build": "setup", "json": "build", "bare": "build"}


def instructions(phase: str, n: int) -> int:
    total = 0
    for step, sign in ((phase, 1), (_BASELINE[phase], -1)):
        with tempfile.NamedTemporaryFile(suffix=".cg") as f:
            subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={f.name}", sys.executable,
                            __file__, "--phase", step, "--records", str(n)],
                           check=True, capture_output=True)
            text = open(f.name).read()
        total += sign * int(re.search(r"^summary: (\d+)", text, re.M).group(1))
    return total // n


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--records", type=int, default=20480)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--phase", choices=("setup", "build", "json", "bare"))
    p.add_argument("--instructions", action="store_true", help="also count instructions/record under callgrind")
    a = p.parse_args()
    if a.phase:
        run_phase(a.phase, a.records)
        return
    print(f"load average {os.getloadavg()[0]:.1f}")
    for phase, ns in timed(a.records, a.repeat).items():
        line = f"{phase:6s} {ns:8.0f} ns/record (CPU)"
        if a.instructions:
            line += f"  {instructions(phase, min(a.records, 10240)):8d} instructions/record"
        print(line, flush=True)


if __name__ == "__main__":
    main()
