"""``event.converting.failure.handling.mode`` with the PostgreSQL values cdc cannot convert: numeric ``NaN`` and
``±Infinity`` under ``decimal.handling.mode=precise`` (a Connect Decimal has no such values), read by the
snapshot and streamed. warn and fail are covered in test_postgres_types_e2e; here skip, and every special."""

from __future__ import annotations

import logging
import threading
import time

from cdc_core.engine import Engine
from cdc_core.stores.memory_offsets import MemoryOffsetStore


def _capture(pg, db, mode: str) -> tuple[list, BaseException | None]:
    pg.execute("CREATE TABLE n (id int PRIMARY KEY, fixed numeric(10,2), free numeric);"
               "INSERT INTO n VALUES (1, 'NaN', 'Infinity'), (2, 1.5, '-Infinity')", dbname=db)
    engine = Engine({"connector.class": "postgres", "database.hostname": pg.host, "database.port": pg.port,
                     "database.user": pg.user, "database.dbname": db, "topic.prefix": "cf", "poll.interval.ms": 50,
                     "event.converting.failure.handling.mode": mode}, offset_store=MemoryOffsetStore())
    records: list = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            engine.run(records.extend)
        except BaseException as e:  # noqa: BLE001 - handed to the test
            errors.append(e)

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    deadline = time.monotonic() + 30
    while not engine.metrics.streaming.connected and runner.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    pg.execute("INSERT INTO n VALUES (3, 'NaN', 'NaN')", dbname=db)
    while runner.is_alive() and len([r for r in records if r.value]) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    engine.stop()
    runner.join(30)
    return [r.value for r in records if r.value], (errors[0] if errors else None)


def test_skip_writes_null_and_logs_only_at_debug_level(pg_server, pg_db, caplog):
    with caplog.at_level(logging.DEBUG):
        values, error = _capture(pg_server, pg_db, "skip")
    assert error is None
    rows = {v["after"]["id"]: v["after"] for v in values}
    assert rows[1]["fixed"] is None and rows[1]["free"] is None
    assert rows[2]["fixed"] == "AJY=" and rows[2]["free"] is None
    assert rows[3]["fixed"] is None and rows[3]["free"] is None
    assert [v["op"] for v in values] == ["r", "r", "c"]
    failed = [r for r in caplog.records if "failed to convert the value of" in r.getMessage()]
    assert failed and {r.levelname for r in failed} == {"DEBUG"}
    assert any("n.free" in r.getMessage() and "Infinity" in r.getMessage() for r in failed)
