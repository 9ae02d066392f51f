"""Snapshot plus streaming into Delta through apply_changes: equal after every step, restarts, crashes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import cdc_spark
from spark_helpers import create_items, delta_rows, source_rows, wait_until

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "spark_postgres_to_delta.py"


def _start(spark, props, delta, checkpoint, on_batch=None, **options):
    def apply(batch, batch_id):
        if on_batch is not None:
            on_batch(batch, batch_id, "before")
        cdc_spark.apply_changes(batch, delta, keys=["id"])
        if on_batch is not None:
            on_batch(batch, batch_id, "after")

    stream = spark.readStream.format("cdc").options(**props, table="public.items", **options).load()
    return (stream.writeStream.foreachBatch(apply).option("checkpointLocation", checkpoint)
            .trigger(processingTime="300 milliseconds").start())


def _equal(pg_server, db, delta):
    return lambda: delta_rows(delta) == source_rows(pg_server, db)


def _confirmed(pg_server, db) -> int:
    rows = pg_server.execute("SELECT confirmed_flush_lsn - '0/0' FROM pg_replication_slots WHERE slot_name = 'debezium'", dbname=db)
    return int(rows[0][0]) if rows else 0


def test_snapshot_stream_stop_and_restart(spark, pg_props, pg_server, pg_db, tmp_path):
    create_items(pg_server, pg_db, 2000)
    delta, checkpoint = str(tmp_path / "items"), str(tmp_path / "ck")
    ex = lambda sql: pg_server.execute(sql, dbname=pg_db)  # noqa: E731
    query = _start(spark, {**pg_props, "snapshotChunkRows": "500"}, delta, checkpoint)
    try:
        wait_until(_equal(pg_server, pg_db, delta), what="the snapshot in Delta")
        steps = [
            "INSERT INTO items SELECT g, 'new ' || g, 1 FROM generate_series(2001, 2100) g",
            "UPDATE items SET qty = qty + 1, name = name || '!' WHERE id % 10 = 0",
            "DELETE FROM items WHERE id % 7 = 0",
            "UPDATE items SET id = id + 100000 WHERE id IN (1, 2, 3)",  # key changes
            "BEGIN; INSERT INTO items VALUES (5000, 'x', 1); UPDATE items SET name = 'y' WHERE id = 5000; "
            "DELETE FROM items WHERE id = 5000; INSERT INTO items VALUES (5000, 'z', 2); COMMIT",
        ]
        for step in steps:
            ex(step)
            wait_until(_equal(pg_server, pg_db, delta), what=f"Delta to match after: {step}")
        wait_until(lambda: _confirmed(pg_server, pg_db) > 0, what="the slot confirmed after Spark commits")
    finally:
        query.stop()
    assert query.exception() is None
    ex("INSERT INTO items SELECT g, 'while stopped', 3 FROM generate_series(6000, 6050) g")
    ex("DELETE FROM items WHERE id BETWEEN 10 AND 20")
    query = _start(spark, pg_props, delta, checkpoint)
    try:
        wait_until(_equal(pg_server, pg_db, delta), what="Delta to match after the restart")
        ex("UPDATE items SET name = 'after restart' WHERE id = 6000")
        wait_until(_equal(pg_server, pg_db, delta), what="Delta to match after a change past the restart")
    finally:
        query.stop()


def test_crash_mid_batch_replays_the_same_rows(spark, pg_props, pg_server, pg_db, tmp_path):
    create_items(pg_server, pg_db, 100)
    delta, checkpoint = str(tmp_path / "items"), str(tmp_path / "ck")
    seen: dict[int, list] = {}
    crash = {"armed": True}

    def on_batch(batch, batch_id, when):
        if when == "before":
            rows = sorted((r.position, r.op, r.key) for r in batch.select("position", "op", "key").collect())
            seen.setdefault(batch_id, []).append(rows)
        elif crash["armed"] and any(r.op in ("c", "u") for r in batch.select("op").collect()):
            crash["armed"] = False
            raise RuntimeError("simulated crash after the Delta commit, before Spark's")

    query = _start(spark, pg_props, delta, checkpoint, on_batch, maxEventsPerTrigger="5")
    try:
        wait_until(_equal(pg_server, pg_db, delta), what="the snapshot in Delta")
        pg_server.execute("INSERT INTO items SELECT g, 'n', 1 FROM generate_series(101, 120) g", dbname=pg_db)
        pg_server.execute("UPDATE items SET name = 'u' WHERE id <= 3", dbname=pg_db)
        with pytest.raises(Exception, match="simulated crash"):
            query.awaitTermination(120)
    finally:
        query.stop()
    query = _start(spark, pg_props, delta, checkpoint, on_batch, maxEventsPerTrigger="5")
    try:
        wait_until(_equal(pg_server, pg_db, delta), what="Delta to match after the crash and restart")
    finally:
        query.stop()
    replayed = [attempts for attempts in seen.values() if len(attempts) > 1]
    assert replayed, "the crashed batch was not replayed"
    assert all(a == attempts[0] for attempts in replayed for a in attempts), "a replayed batch differed"
    assert all(len(a) <= 5 for attempts in seen.values() for a in attempts[1:] if a and a[0][1] != "r")


def _example(pg_server, db, tmp_path, *extra):
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    return subprocess.Popen(
        [sys.executable, str(EXAMPLE), "--host", pg_server.host, "--port", str(pg_server.port),
         "--user", pg_server.user, "--dbname", db, "--table", "public.items", "--key", "id",
         "--delta", str(tmp_path / "items"), "--checkpoint", str(tmp_path / "ck"), *extra],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )


def test_example_job_killed_and_restarted(pg_server, pg_db, tmp_path):
    create_items(pg_server, pg_db, 500)
    delta = str(tmp_path / "items")
    job = _example(pg_server, pg_db, tmp_path)
    try:
        wait_until(lambda: len(delta_rows(delta)) == 500, timeout=120, what="the example's snapshot")
        for i in range(5):
            pg_server.execute(f"UPDATE items SET qty = qty + 1 WHERE id % 5 = {i}", dbname=pg_db)
            time.sleep(0.3)
    finally:
        os.killpg(job.pid, signal.SIGKILL)  # mid-stream, wherever it is
        job.wait(30)
    pg_server.execute("INSERT INTO items SELECT g, 'after kill', 0 FROM generate_series(501, 600) g", dbname=pg_db)
    pg_server.execute("DELETE FROM items WHERE id < 50", dbname=pg_db)
    # The killed job's walsender may linger for a moment before the slot is free again.
    wait_until(lambda: not pg_server.execute("SELECT active FROM pg_replication_slots WHERE slot_name = 'debezium'",
                                             dbname=pg_db)[0][0], what="the slot to be released")
    job = _example(pg_server, pg_db, tmp_path, "--available-now")
    _, err = job.communicate(timeout=180)
    assert job.returncode == 0, err.decode()[-3000:]
    assert delta_rows(delta) == source_rows(pg_server, pg_db)
