"""MariaDB's chunked snapshot without Spark: chunks read in parallel under writes, then the binlog through the handoff filter."""

from __future__ import annotations

import random
import threading

from cdc_core.config import Config
from cdc_core.events import Checkpoint, RawChange
from cdc_core.spi.chunks import ChunkRead, handoff_filter, snapshot_chunks_for
from cdc_core.spi.connector import ConnectorContext
from cdc_core.logs import connector_logger
from cdc_core.spi.position import log_position_for
from cdc_mariadb.connector import MariaDbConnector
from mariadb_cdc import connector_config

#: The statements of the snapshot's schema change events (Debezium's BinlogSnapshotChangeEventSource).
SNAPSHOT_DDL = ("SET character_set_server=", "DROP TABLE IF EXISTS ", "DROP DATABASE IF EXISTS ", "CREATE DATABASE ",
                "USE ", "CREATE TABLE")


def _config(server, db: str) -> Config:
    return Config({**connector_config(server, db), "snapshot.fetch.size": "50"})


class _Writes:
    """How many row changes the writer committed so far (each one a binlog transaction)."""

    def __init__(self):
        self.count = 0
        self.changed = threading.Condition()

    def add(self, n: int) -> None:
        with self.changed:
            self.count += n
            self.changed.notify_all()

    def wait_for(self, count: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: self.count >= count, 60), "the writer made no progress"


def _writer(server, db: str, stop: threading.Event, next_id: int, writes: _Writes) -> threading.Thread:
    def loop():
        rng = random.Random(3)
        conn = server.connect(db)
        nid = next_id
        with conn.cursor() as cur:
            while not stop.is_set():
                r = rng.random()
                if r < 0.7:
                    changed = cur.execute("UPDATE counters SET n = n + 1 WHERE id = %s", (rng.randint(1, nid),))
                elif r < 0.9:
                    changed = cur.execute("INSERT INTO counters VALUES (%s, 0)", (nid,))
                    nid += 1
                else:
                    changed = cur.execute("DELETE FROM counters WHERE id = %s", (rng.randint(1, nid),))
                writes.add(changed)
        conn.close()
    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def test_chunks_read_under_writes_then_the_filtered_stream_is_the_table(mariadb_server, mariadb_db):
    server, db = mariadb_server, mariadb_db
    server.execute(["CREATE TABLE counters (id int PRIMARY KEY, n int NOT NULL)",
                    "INSERT INTO counters SELECT seq, 0 FROM seq_1_to_3000"], database=db)
    config = _config(server, db)
    cls = snapshot_chunks_for(MariaDbConnector)
    capability = cls(config, None)
    stop = threading.Event()
    writes = _Writes()
    writer = _writer(server, db, stop, 3001, writes)
    plan = capability.open(for_streaming=True, tables=None, chunk_rows=300)
    assert plan.reports_reads and len(plan.chunks) >= 8
    rows: dict[int, int] = {}
    reports: dict[tuple[str, int], list[dict]] = {}
    errors: list[BaseException] = []
    lock = threading.Lock()
    # Two waves of chunks, as executors start: the even chunks together (their positions are read
    # at the same moment), the odd ones once the writer committed changes after every even read
    # (so the chunks are read at different positions however loaded the machine is).
    first_wave = {c.index for c in plan.chunks if c.index % 2 == 0}
    first_wave_read = threading.Event()
    mark: list[int] = []

    def read(chunk):
        try:
            if chunk.index not in first_wave:
                assert first_wave_read.wait(60), "the first chunks reported no read position"
                writes.wait_for(mark[0] + 2)  # the second one started after the first wave's reads
            for batch in cls.read_chunk(config, chunk):
                with lock:
                    if isinstance(batch[0], ChunkRead):
                        reports.setdefault((batch[0].table, batch[0].index), []).append(batch[0].position)
                        if not first_wave_read.is_set() and first_wave <= {i for _, i in reports}:
                            mark.append(writes.count)
                            first_wave_read.set()
                        continue
                    for change in batch:
                        if not isinstance(change, RawChange):  # the schema change events, with the first chunk
                            assert chunk.index == 0 and change.value["ddl"].startswith(SNAPSHOT_DDL)
                            continue
                        assert change.op == "r" and change.after[0] not in rows, f"row {change.after[0]} read twice"
                        rows[change.after[0]] = change.after[1]
        except BaseException as e:  # reported by the test, not lost in the thread
            errors.append(e)
            first_wave_read.set()

    readers = [threading.Thread(target=read, args=(c,)) for c in plan.chunks]
    for t in readers:
        t.start()
    for t in readers:
        t.join(120)
    assert not errors, errors
    assert not any(t.is_alive() for t in readers), "a chunk read did not finish"
    capability.close()
    writes.wait_for(writes.count + 10)  # and some changes after every read
    stop.set()
    writer.join(30)
    assert not writer.is_alive()
    state = capability.handoff(plan, reports)
    assert state is not None and len({(p["file"], p["pos"]) for v in reports.values() for p in v}) > 1, \
        "the chunks were all read at one position: nothing to hand off"
    end = log_position_for(MariaDbConnector)(config).current_position()

    connector = MariaDbConnector(config, ConnectorContext(log=connector_logger("cdc.mariadb", "mariadb", "t")))
    flt = handoff_filter(cls, config, state)
    connector.start(plan.resume_offset)
    dropped = kept = 0
    try:
        done = False
        for batch in connector.stream():
            out = flt.filter(batch)
            dropped += sum(1 for c in batch if isinstance(c, RawChange)) - sum(1 for c in out if isinstance(c, RawChange))
            for change in out:
                if isinstance(change, RawChange) and change.table.id.table == "counters":
                    kept += 1
                    key = (change.after or change.before)[0]
                    if change.op == "c":
                        assert key not in rows, f"insert of {key} already in the chunk rows"
                        rows[key] = change.after[1]
                    elif change.op == "u":
                        assert rows.get(key) == change.after[1] - 1, f"update of {key} to {change.after[1]} over {rows.get(key)}"
                        rows[key] = change.after[1]
                    else:
                        assert rows.pop(key, None) is not None, f"delete of {key} not in the rows"
                offset = change.offset if isinstance(change, (RawChange, Checkpoint)) else None
                if offset and log_position_for(MariaDbConnector)(config).reached(offset, end):
                    done = True
            if done:
                break
    finally:
        connector.stop()
        connector.close()
    assert dropped > 0 and kept > 0
    assert flt.state() is None
    assert rows == {r[0]: r[1] for r in server.execute("SELECT id, n FROM counters", database=db)}


def test_a_read_under_a_brief_global_read_lock_reports_the_position_of_its_rows(mariadb_server, mariadb_db):
    # The path servers without binlog_snapshot_* take (MySQL); MariaDB runs it the same way.
    server, db = mariadb_server, mariadb_db
    server.execute(["CREATE TABLE counters (id int PRIMARY KEY, n int NOT NULL)",
                    "INSERT INTO counters SELECT seq, 0 FROM seq_1_to_100"], database=db)
    config = _config(server, db)
    cls = snapshot_chunks_for(MariaDbConnector)
    capability = cls(config, None)
    plan = capability.open(for_streaming=False, tables=[f"{db}.counters"], chunk_rows=1000)
    capability.close()
    server.execute("UPDATE counters SET n = 1 WHERE id = 5", database=db)
    now = log_position_for(MariaDbConnector)(config).current_position()
    chunk = plan.chunks[0]
    chunk.extra["method"] = "read_lock"
    batches = list(cls.read_chunk(config, chunk))
    assert batches[0] == [ChunkRead(f"{db}.counters", 0, {"file": now["file"], "pos": now["pos"]})]
    rows = {c.after[0]: c.after[1] for b in batches[1:] for c in b}
    assert len(rows) == 100 and rows[5] == 1
    assert {c.source["pos"] for b in batches[1:] for c in b} == {now["pos"]}
