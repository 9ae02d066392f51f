"""MariaDB through the ``cdc`` source: a parallel snapshot under concurrent writes, streaming, restarts, AvailableNow."""

from __future__ import annotations

import glob
import random
import threading
import time

import pytest
from deltalake import DeltaTable

import cdc_spark
from spark_helpers import wait_until


def _props(server, db: str, tmp_path) -> dict[str, str]:
    return {
        "connector": "mariadb", "database.hostname": server.host, "database.port": str(server.port),
        "database.user": server.user, "database.password": server.password, "database.server.id": "6100",
        "database.include.list": db, "topic.prefix": "sm", "poll.interval.ms": "100",
        "schema.history.internal.file.filename": str(tmp_path / "history.jsonl"),
    }


def _source(server, db: str) -> dict[int, tuple]:
    return {r[0]: (r[1], r[2]) for r in server.execute("SELECT id, n, name FROM counters", database=db)}


def _delta(path: str) -> dict[int, tuple]:
    try:
        rows = DeltaTable(path).to_pyarrow_table().to_pylist()
    except Exception:
        return {}
    out = {r["id"]: (r["n"], r["name"]) for r in rows}
    assert len(out) == len(rows), "duplicate keys in the Delta table"
    return out


class Writer:
    """Random single-row transactions: ``n = n + 1`` updates, inserts of new ids (n = 0), deletes."""

    def __init__(self, server, db: str, next_id: int):
        self.conn = server.connect(db)
        self.next_id = next_id
        self.rng = random.Random(7)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.count = 0

    def step(self) -> None:
        with self.conn.cursor() as cur:
            r = self.rng.random()
            if r < 0.7:
                cur.execute("UPDATE counters SET n = n + 1 WHERE id = %s", (self.rng.randint(1, self.next_id),))
            elif r < 0.9:
                cur.execute("INSERT INTO counters VALUES (%s, 0, 'new')", (self.next_id,))
                self.next_id += 1
            else:
                cur.execute("DELETE FROM counters WHERE id = %s", (self.rng.randint(1, self.next_id),))
        self.count += 1

    def run(self, n: int) -> None:
        for _ in range(n):
            self.step()

    def start(self) -> Writer:
        def loop():
            while not self._stop.is_set():
                self.step()
                time.sleep(0.002)
        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)


class Applied:
    """Every applied row by batch (a replayed batch replaces its rows), checked per key in order."""

    def __init__(self):
        self.batches: dict[int, list[tuple]] = {}

    def record(self, batch, batch_id: int) -> None:
        rows = [(r.position, r.op, (r.after or r.before).id, r.after.n if r.after else None)
                for r in batch.select("position", "op", "before", "after").collect() if r.op is not None]
        self.batches[batch_id] = sorted(rows, key=lambda x: x[0])

    def check(self) -> int:
        """Each key: a snapshot row or an insert, then +1 updates only, nothing after a delete; returns the events."""
        state: dict[int, int | None] = {}
        count = 0
        for batch_id in sorted(self.batches):
            snapshot = [r for r in self.batches[batch_id] if r[1] == "r"]
            for _, _, key, n in snapshot:  # a (new) snapshot replaces what the table had
                state[key] = n
            for position, op, key, n in (r for r in self.batches[batch_id] if r[1] != "r"):
                count += 1
                have = state.get(key, "absent")
                where = f"batch {batch_id} position {position} key {key}"
                if op == "c":
                    assert have in ("absent",), f"{where}: insert of a key already there (n={have}): applied twice"
                elif op == "u":
                    assert have not in ("absent", None) and n == have + 1, \
                        f"{where}: update to n={n} over n={have}: a stale or repeated change"
                elif op == "d":
                    assert have not in ("absent", None), f"{where}: delete of a key already gone: applied twice"
                state[key] = None if op == "d" else n
        return count


def _start(spark, props, delta, checkpoint, applied: Applied, available_now: bool = False, crash=None, **options):
    def apply(batch, batch_id):
        applied.record(batch, batch_id)
        cdc_spark.apply_changes(batch, delta, keys=["id"])
        if crash is not None:
            crash(applied.batches[batch_id], batch_id)

    stream = spark.readStream.format("cdc").options(**props, **options).load()
    writer = stream.writeStream.foreachBatch(apply).option("checkpointLocation", checkpoint)
    trigger = {"availableNow": True} if available_now else {"processingTime": "300 milliseconds"}
    return writer.trigger(**trigger).start()


def test_parallel_snapshot_under_writes_stream_restart_and_available_now(spark, mariadb_server, mariadb_db, tmp_path):
    server, db = mariadb_server, mariadb_db
    server.execute(["CREATE TABLE counters (id int PRIMARY KEY, n int NOT NULL, name varchar(40))",
                    "INSERT INTO counters SELECT seq, 0, concat('row ', seq) FROM seq_1_to_4000"], database=db)
    props = {**_props(server, db, tmp_path), "table": f"{db}.counters", "snapshotChunkRows": "400"}
    delta, checkpoint = str(tmp_path / "counters"), str(tmp_path / "ck")
    equal = lambda: _delta(delta) == _source(server, db)  # noqa: E731
    applied = Applied()
    writer = Writer(server, db, 4001).start()  # writes through the whole parallel snapshot
    query = _start(spark, props, delta, checkpoint, applied)
    try:
        wait_until(lambda: any(r[1] == "r" for b in list(applied.batches.values()) for r in b), timeout=120,
                   what="the snapshot batch")
        time.sleep(1.0)
        writer.stop()
        wait_until(equal, timeout=120, what="Delta to match after the snapshot under concurrent writes")
        writer.run(200)
        wait_until(equal, what="Delta to match after more writes")
    finally:
        query.stop()
    assert query.exception() is None
    handoffs = [f for f in glob.glob(f"{checkpoint}/offsets/*") if '"handoff"' in open(f).read()]
    assert handoffs, "no chunk was read after the snapshot's start position: the handoff was not exercised"
    assert applied.check() > 0

    writer.run(300)  # while stopped
    query = _start(spark, props, delta, checkpoint, applied)
    try:
        wait_until(equal, timeout=120, what="Delta to match after the restart")
        writer.run(100)
        wait_until(equal, what="Delta to match after writes past the restart")
    finally:
        query.stop()
    assert query.exception() is None

    writer.run(200)
    before = _source(server, db)
    query = _start(spark, props, delta, checkpoint, applied, available_now=True)
    late = []
    deadline = time.monotonic() + 180
    with server.connect(db) as conn, conn.cursor() as cur:  # inserts until the query stops: some come after its start
        while query.isActive and time.monotonic() < deadline:
            cur.execute("INSERT INTO counters VALUES (%s, 0, 'late')", (900_000 + len(late),))
            late.append(900_000 + len(late))
            time.sleep(0.05)
    assert query.awaitTermination(10), "Trigger.AvailableNow did not stop"
    assert query.exception() is None
    got = _delta(delta)
    seen_late = sorted(k for k in got if k >= 900_000)
    assert seen_late == late[: len(seen_late)], "AvailableNow delivered a late insert without those before it"
    assert {k: v for k, v in got.items() if k < 900_000} == before
    assert len(seen_late) < len(late), "AvailableNow read past the position when the query started"
    applied.check()
    writer.conn.close()


def test_crash_in_the_handoff_replays_through_the_same_filter(spark, mariadb_server, mariadb_db, tmp_path):
    server, db = mariadb_server, mariadb_db
    server.execute(["CREATE TABLE counters (id int PRIMARY KEY, n int NOT NULL, name varchar(40))",
                    "INSERT INTO counters SELECT seq, 0, 'row' FROM seq_1_to_2000"], database=db)
    props = {**_props(server, db, tmp_path), "table": f"{db}.counters", "snapshotChunkRows": "250",
             "maxEventsPerTrigger": "20"}
    delta, checkpoint = str(tmp_path / "counters"), str(tmp_path / "ck")
    applied = Applied()
    crashed: list[int] = []

    def crash(rows, batch_id):
        if not crashed and any(r[1] != "r" for r in rows):
            crashed.append(batch_id)
            raise RuntimeError("simulated crash after the Delta commit, before Spark's")

    writer = Writer(server, db, 2001).start()
    query = _start(spark, props, delta, checkpoint, applied, crash=crash)
    try:
        wait_until(lambda: bool(crashed) or not query.isActive, timeout=120, what="the first stream batch")
        writer.stop()
        with pytest.raises(Exception, match="simulated crash"):
            query.awaitTermination(60)
    finally:
        query.stop()
    assert '"handoff"' in open(f"{checkpoint}/offsets/{crashed[0] - 1}").read(), "the crash came after the handoff"
    query = _start(spark, props, delta, checkpoint, applied)
    try:
        wait_until(lambda: _delta(delta) == _source(server, db), timeout=120, what="Delta to match after the crash")
    finally:
        query.stop()
    assert query.exception() is None
    applied.check()
    writer.conn.close()


def test_batch_read_is_every_table(spark, mariadb_server, mariadb_db, tmp_path):
    server, db = mariadb_server, mariadb_db
    server.execute(["CREATE TABLE items (id bigint PRIMARY KEY, name varchar(20))",
                    "INSERT INTO items SELECT seq, concat('i', seq) FROM seq_1_to_2500",
                    "CREATE TABLE pairs (a varchar(5), b int, PRIMARY KEY (a, b))",
                    "INSERT INTO pairs SELECT concat('k', seq % 7), seq FROM seq_1_to_300",
                    "CREATE TABLE heap (x int, y text)",
                    "INSERT INTO heap SELECT seq, 'y' FROM seq_1_to_150"], database=db)
    df = spark.read.format("cdc").options(**_props(server, db, tmp_path), snapshotChunkRows="500").load()
    assert df.rdd.getNumPartitions() >= 5 + 1 + 1  # items in key ranges (from InnoDB's row estimate), the others whole
    counts = {r["topic"]: r["count"] for r in df.groupBy("topic").count().collect()}
    # The schema change topic carries Debezium's snapshot statements: SET character_set_server, a DROP
    # TABLE IF EXISTS per table, DROP/CREATE DATABASE and USE, the CREATE TABLEs (ten for this database;
    # more if other databases are on the shared server, as store.only.captured.tables.ddl is false).
    assert counts.pop("sm") >= 10
    assert counts == {f"sm.{db}.items": 2500, f"sm.{db}.pairs": 300, f"sm.{db}.heap": 150}
    assert {r.op for r in df.where("topic != 'sm'").select("op").distinct().collect()} == {"r"}
    typed = spark.read.format("cdc").options(**_props(server, db, tmp_path), table=f"{db}.items",
                                              snapshotChunkRows="500").load()
    assert dict(typed.select("after.*").dtypes) == {"id": "bigint", "name": "string"}
    assert sorted(r.id for r in typed.select("after.id").collect()) == list(range(1, 2501))


TYPES = """CREATE TABLE typed (
  id int PRIMARY KEY, d date, dt datetime(3), ts timestamp(6) NULL, t time(6), y year,
  dec1 decimal(12,4), big bigint unsigned, f float, db double, j json, e enum('a','b'), s set('x','y','z'),
  b bit(4), flag tinyint(1), bl blob, vc varchar(10) CHARACTER SET utf8mb4, g point)"""


def test_typed_columns_of_mariadb_types(spark, mariadb_server, mariadb_db, tmp_path):
    import datetime as dt
    from decimal import Decimal

    server, db = mariadb_server, mariadb_db
    server.execute([TYPES, "INSERT INTO typed VALUES (1, '2024-02-29', '2024-01-02 03:04:05.678', "
                    "'2024-01-02 03:04:05.123456', '12:34:56.5', 2024, 12345678.1234, 18446744073709551615, 1.5, "
                    "2.25, '{\"k\": [1, 2]}', 'b', 'x,z', b'1010', 1, x'00ff', 'héllo', ST_GeomFromText('POINT(1 2)'))",
                    "INSERT INTO typed (id) VALUES (2)"], database=db)
    df = spark.read.format("cdc").options(**_props(server, db, tmp_path), table=f"{db}.typed").load()
    types = dict(df.select("after.*").dtypes)
    assert types["d"] == "date" and types["dt"] == "timestamp_ntz" and types["ts"] == "timestamp"
    assert types["dec1"] == "decimal(12,4)" and types["j"] == "string" and types["e"] == "string"
    rows = {r.id: r for r in df.select("after.*").collect()}
    one = rows[1]
    assert one.d == dt.date(2024, 2, 29)
    assert one.dt == dt.datetime(2024, 1, 2, 3, 4, 5, 678000)
    ts = df.where("after.id = 1").selectExpr("cast(after.ts as string)").first()[0]  # the session's time zone is UTC
    assert ts == "2024-01-02 03:04:05.123456"
    assert one.t == (12 * 3600 + 34 * 60 + 56) * 1_000_000 + 500_000  # io.debezium.time.MicroTime: microseconds
    assert one.y == 2024 and one.dec1 == Decimal("12345678.1234") and one.big == -1  # bigint.unsigned.handling.mode=long
    assert one.f == 1.5 and one.db == 2.25 and one.e == "b" and one.s == "x,z"
    assert one.j.replace(" ", "") == '{"k":[1,2]}'
    assert one.b == bytes([0b1010]) and one.flag == 1 and one.bl == b"\x00\xff" and one.vc == "héllo"
    assert one.g.srid is None or one.g.srid == 0
    assert bytes(one.g.wkb)[:1] == b"\x01"  # WKB, little endian
    assert all(getattr(rows[2], c) is None for c in types if c != "id")
