"""Helpers for the Spark tests: source and target table contents, waiting for convergence."""

from __future__ import annotations

import time
from collections.abc import Callable

from deltalake import DeltaTable


def source_rows(pg_server, db: str, table: str = "public.items") -> dict[int, tuple]:
    """The source table's rows by id: ``id -> (name, qty)``."""
    return {r[0]: (r[1], r[2]) for r in pg_server.execute(f"SELECT id, name, qty FROM {table}", dbname=db)}


def delta_rows(path: str) -> dict[int, tuple]:
    """The Delta table's rows by id (asserting each id appears once)."""
    try:
        rows = DeltaTable(path).to_pyarrow_table().to_pylist()
    except Exception:
        return {}
    out = {r["id"]: (r["name"], r["qty"]) for r in rows}
    assert len(out) == len(rows), "duplicate keys in the Delta table"
    return out


def wait_until(predicate: Callable[[], bool], timeout: float = 60.0, what: str = "condition") -> None:
    """Poll ``predicate`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def create_items(pg_server, db: str, rows: int) -> None:
    """``public.items (id int PK, name text, qty numeric(10,2))`` with ``rows`` rows."""
    pg_server.execute("CREATE TABLE public.items (id int PRIMARY KEY, name text, qty numeric(10,2))", dbname=db)
    pg_server.execute("INSERT INTO public.items SELECT g, 'item ' || g, g / 4.0 FROM generate_series(1, %s) g",
                      params=(rows,), dbname=db)
    pg_server.execute("ANALYZE public.items", dbname=db)
