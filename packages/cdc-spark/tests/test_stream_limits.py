"""Admission control and stopping: the snapshot in batches of chunks within maxEventsPerTrigger (restarted
mid-snapshot, and crashed mid-snapshot), and Trigger.AvailableNow stopping at the position current at its
start while writes go on."""

from __future__ import annotations

import threading
import time

import orjson
import pytest

import cdc_spark
from spark_helpers import create_items, delta_rows, source_rows, wait_until


def _query(spark, props, checkpoint, on_batch, trigger: dict, **options):
    stream = spark.readStream.format("cdc").options(**props, table="public.items", **options).load()
    return stream.writeStream.foreachBatch(on_batch).option("checkpointLocation", checkpoint).trigger(**trigger).start()


def test_snapshot_batches_respect_the_read_limit_across_restarts(spark, pg_props, pg_server, pg_db, tmp_path):
    create_items(pg_server, pg_db, 3000)  # six chunks of 500 rows
    delta, checkpoint = str(tmp_path / "items"), str(tmp_path / "ck")
    props = {**pg_props, "snapshotChunkRows": "500"}
    batches: list[tuple[int, int, set]] = []
    crash = {"at": None}

    def on_batch(batch, batch_id):
        rows = batch.select("op", "snapshot_id").collect()
        batches.append((batch_id, len(rows), {r.snapshot_id for r in rows if r.op == "r"}))
        cdc_spark.apply_changes(batch, delta, keys=["id"])
        if crash["at"] == batch_id:
            crash["at"] = None
            raise RuntimeError("simulated crash after the Delta commit, before Spark's")

    # One batch (two chunks), then stop: the next query finds that snapshot gone and starts a new one.
    query = _query(spark, props, checkpoint, on_batch, {"processingTime": "1 hour"}, maxEventsPerTrigger="1000")
    try:
        wait_until(lambda: len(batches) == 1 and query.lastProgress is not None, what="the first snapshot batch")
    finally:
        query.stop()
    assert batches[0][1] == 1000 and len(delta_rows(delta)) == 1000
    pg_server.execute("UPDATE items SET name = 'changed' WHERE id % 100 = 0", dbname=pg_db)

    # A new snapshot from its first chunk; crash after its second batch reached Delta.
    crash["at"] = 2
    query = _query(spark, props, checkpoint, on_batch, {"processingTime": "200 milliseconds"}, maxEventsPerTrigger="1000")
    with pytest.raises(Exception, match="simulated crash"):
        query.awaitTermination(120)
    query.stop()
    assert [n for _, n, _ in batches[1:]] == [1000, 1000]
    assert batches[1][2] != batches[0][2] and batches[2][2] == batches[1][2]

    # The crashed batch is replayed from a third snapshot (chunks 0-3 at once), then the rest, then the log.
    query = _query(spark, props, checkpoint, on_batch, {"processingTime": "200 milliseconds"}, maxEventsPerTrigger="1000")
    try:
        wait_until(lambda: delta_rows(delta) == source_rows(pg_server, pg_db), what="Delta to match after the restarts")
        pg_server.execute("INSERT INTO items SELECT g, 'new', 1 FROM generate_series(5001, 5010) g", dbname=pg_db)
        wait_until(lambda: delta_rows(delta) == source_rows(pg_server, pg_db), what="Delta to match the stream")
    finally:
        query.stop()
    replay, rest = batches[3], batches[4]
    assert replay[0] == 2 and replay[1] == 2000 and replay[2] not in (batches[1][2],)
    assert rest[1] == 1000 and rest[2] == replay[2]
    assert all(n <= 1000 for _, n, _ in batches[4:])


class _Writer(threading.Thread):
    """Inserts rows with increasing ids, one transaction each, remembering which committed."""

    def __init__(self, pg_server, db: str, first_id: int):
        super().__init__(daemon=True)
        self.pg_server, self.db, self.next_id = pg_server, db, first_id
        self.committed: list[int] = []
        self.done = threading.Event()

    def run(self) -> None:
        import psycopg

        with psycopg.connect(host=self.pg_server.host, port=self.pg_server.port, user=self.pg_server.user,
                             dbname=self.db, autocommit=True) as conn:
            while not self.done.is_set():
                conn.execute("INSERT INTO items VALUES (%s, 'w', 1)", (self.next_id,))
                self.committed.append(self.next_id)
                self.next_id += 1
                time.sleep(0.002)


def test_available_now_stops_at_the_start_position_under_constant_writes(spark, pg_props, pg_server, pg_db, tmp_path):
    create_items(pg_server, pg_db, 500)
    checkpoint = str(tmp_path / "ck")
    seen: list[int] = []

    def on_batch(batch, _):
        for row in batch.select("value").collect():
            payload = orjson.loads(row.value)["payload"]
            seen.append((payload["after"] or payload["before"])["id"])

    writer = _Writer(pg_server, pg_db, 100_001)
    writer.start()
    try:
        wait_until(lambda: len(writer.committed) > 50, what="the writer")
        for run in range(2):
            before = set(writer.committed)
            query = _query(spark, pg_props, checkpoint, on_batch, {"availableNow": True}, maxEventsPerTrigger="300")
            assert query.awaitTermination(120), "Trigger.AvailableNow did not stop under constant writes"
            assert query.exception() is None
            after = set(writer.committed)
            got = [i for i in seen if i > 100_000]
            assert len(got) == len(set(got)), "an event was delivered twice"
            assert before <= set(got), f"run {run}: changes committed before the start are missing"
            assert set(got) == set(range(100_001, max(got) + 1)), "the output is not a prefix of the commit order"
            assert max(got) < max(after), "the query read up to where the writer was when it stopped"
        assert sorted(i for i in seen if i <= 500) == list(range(1, 501))
    finally:
        writer.done.set()
        writer.join(10)


def test_offset_only_batches_are_rare_but_release_the_log(spark, pg_props, pg_server, pg_db, tmp_path):
    create_items(pg_server, pg_db, 10)
    pg_server.execute("CREATE TABLE other (id int PRIMARY KEY)", dbname=pg_db)
    batches: list[tuple[float, int]] = []

    def on_batch(batch, _):
        batches.append((time.monotonic(), batch.count()))

    def confirmed() -> int:
        rows = pg_server.execute("SELECT confirmed_flush_lsn - '0/0' FROM pg_replication_slots", dbname=pg_db)
        return int(rows[0][0] or 0) if rows else 0

    query = _query(spark, pg_props, str(tmp_path / "ck"), on_batch, {"processingTime": "100 milliseconds"},
                   emptyBatchIntervalMs="2000")
    try:
        wait_until(lambda: batches and batches[0][1] == 10, what="the snapshot batch")
        before = confirmed()
        for i in range(40):  # only another table changes: the offset moves, no event is read
            pg_server.execute(f"INSERT INTO other VALUES ({i})", dbname=pg_db)
            time.sleep(0.1)
        wait_until(lambda: confirmed() > before, what="the slot to move past the other table's changes")
    finally:
        query.stop()
    empty = [at for at, n in batches[1:] if n == 0]
    assert empty, "no batch moved the offset"
    assert all(b - a >= 1.9 for a, b in zip(empty, empty[1:])), "offset-only batches came more often than asked"
