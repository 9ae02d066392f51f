"""Db2 value converters' CPU per value, and the row function's per row, for the streaming benchmark's table.

The columns of ``db2_streaming.py``'s table (INTEGER key, VARCHAR(40), DECIMAL(12,2), BIGINT,
TIMESTAMP(3)) under the default modes, fed values as ibm_db_dbi gives them (int, str, Decimal,
int, datetime). Each converter runs over ``--values`` values on the thread's CPU clock (best of
``--repeat``, so other processes' load counts little), next to the baseline: a bare Python call
(``lambda v: v``), the floor of any converter. Then the row function the envelope runs
(``cdc_core.rows.compile_row_function``) over the rows, against the same function with every
converter the bare call. No database. Usage: ``uv run python benchmarks/db2_converters.py [--values N] [--repeat K]``.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from cdc_core.rows import compile_row_function
from cdc_core.type_modes import TypeModes
from cdc_db2.types import ColumnInfo, column

INFOS = [ColumnInfo("ID", 1, "INTEGER", 4, 0, False), ColumnInfo("NAME", 2, "VARCHAR", 40, 0, True),
         ColumnInfo("AMOUNT", 3, "DECIMAL", 12, 2, True), ColumnInfo("QTY", 4, "BIGINT", 8, 0, True),
         ColumnInfo("CREATED", 5, "TIMESTAMP", 10, 3, True)]


def _rows(n: int) -> list[tuple]:
    """``n`` rows as the benchmark's backlog has them, in ibm_db_dbi's Python types."""
    start = datetime(2024, 1, 1)
    return [(g, f"name-{g}", Decimal(g * 125).scaleb(-2), g * 7, start + timedelta(seconds=g, milliseconds=g % 1000))
            for g in range(1, n + 1)]


def _best(repeat: int, run: Callable[[], None]) -> float:
    """The least thread CPU seconds of ``repeat`` runs."""
    best = float("inf")
    for _ in range(repeat):
        cpu = time.thread_time()
        run()
        best = min(best, time.thread_time() - cpu)
    return best


def _per_value(convert: Callable[[Any], Any], values: Sequence[Any], repeat: int) -> float:
    """ns per value of ``convert`` over ``values``."""
    def run() -> None:
        for v in values:
            convert(v)
    return _best(repeat, run) / len(values) * 1e9


def main() -> None:
    """Run the benchmark and print ns per value and per row."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--values", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rows = _rows(args.values)
    columns = [column(info, TypeModes()) for info in INFOS]

    def bare(v: Any) -> Any:
        return v

    floor = _per_value(bare, [r[0] for r in rows], args.repeat)
    print(f"baseline, a bare Python call: {floor:.0f} ns per value")
    for i, (info, col) in enumerate(zip(INFOS, columns)):
        ns = _per_value(col.convert, [r[i] for r in rows], args.repeat)
        print(f"{info.name} {info.type_name}: {ns:.0f} ns per value ({ns - floor:+.0f} over the bare call)")
    row = compile_row_function(list(enumerate(columns)), with_unavailable=False)
    bare_row = compile_row_function([(i, replace(c, convert=bare)) for i, c in enumerate(columns)], False)
    per_row = _best(args.repeat, lambda: [row(r) for r in rows]) / len(rows) * 1e9
    bare_per_row = _best(args.repeat, lambda: [bare_row(r) for r in rows]) / len(rows) * 1e9
    print(f"row function: {per_row:.0f} ns per row; with bare calls for converters: {bare_per_row:.0f} ns "
          f"(converters {per_row - bare_per_row:.0f} ns per row)")
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
