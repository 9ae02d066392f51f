"""Protocol v2: large transactions stream in while in progress, spill to disk, and emit in commit order."""

from __future__ import annotations


import pytest

from cdc_postgres.embedded import EmbeddedPostgres

from cdc_process import CdcProcess, server_properties, write_properties

TOPIC = "dbserver1.public.t"


@pytest.fixture(scope="module")
def small_decoding_memory():
    """A server that streams any transaction past 64 kB of decoded changes."""
    with EmbeddedPostgres(settings={"logical_decoding_work_mem": "64kB"}) as pg:
        yield pg


def test_large_transactions_are_spilled_and_emitted_in_commit_order(small_decoding_memory, tmp_path):
    pg = small_decoding_memory
    pg.create_database("big")
    pg.execute("CREATE TABLE t (id int PRIMARY KEY, pad text)", dbname="big")
    props = server_properties(pg, "big", tmp_path, **{"provide.transaction.metadata": "true"})
    cdc = CdcProcess(write_properties(tmp_path / "app.properties", props), tmp_path).start()
    try:
        cdc.wait_until(lambda: "streaming from slot" in cdc.log(), what="streaming")
        big = pg.connect("big")
        big.autocommit = False
        big.execute("INSERT INTO t SELECT g, repeat('x', 100) FROM generate_series(1, 5000) g")
        big.execute("SAVEPOINT s1")
        big.execute("INSERT INTO t SELECT g, 'rolled back' FROM generate_series(100001, 101000) g")
        big.execute("ROLLBACK TO SAVEPOINT s1")
        big.execute("INSERT INTO t SELECT g, repeat('y', 100) FROM generate_series(5001, 10000) g")
        # A small transaction commits while the big one is still open: it comes first.
        pg.execute("INSERT INTO t VALUES (200000, 'small')", dbname="big")
        aborted = pg.connect("big")
        aborted.autocommit = False
        aborted.execute("INSERT INTO t SELECT g, repeat('z', 100) FROM generate_series(300001, 305000) g")
        aborted.rollback()
        big.commit()
        events = cdc.wait_events(TOPIC, 10001, timeout=90)
        tx = cdc.wait_events("dbserver1.transaction", 4)
    finally:
        assert cdc.terminate() == 0
    ids = [e["key"]["payload"]["id"] for e in events]
    assert ids[0] == 200000, "the small transaction committed first and must come first"
    assert ids[1:] == list(range(1, 10001)), "the big transaction's rows, in order, without the rolled-back savepoint"
    assert not any(i >= 300001 for i in ids), "an aborted streamed transaction leaked events"
    assert "replaying streamed transaction" in cdc.log()
    ends = [e["value"]["payload"] for e in tx if e["value"]["payload"]["status"] == "END"]
    assert [end["event_count"] for end in ends] == [1, 10000]
    orders = [e["value"]["payload"]["transaction"]["total_order"] for e in events[1:]]
    assert orders == list(range(1, 10001))


def test_crash_during_replay_resumes_without_loss(small_decoding_memory, tmp_path):
    pg = small_decoding_memory
    pg.create_database("crash")
    pg.execute("CREATE TABLE t (id int PRIMARY KEY, pad text)", dbname="crash")
    props = server_properties(pg, "crash", tmp_path, **{"max.batch.size": 500, "slot.name": "crash"})
    config = write_properties(tmp_path / "app.properties", props)
    cdc = CdcProcess(config, tmp_path).start()
    cdc.wait_until(lambda: "streaming from slot" in cdc.log(), what="streaming")
    pg.execute("INSERT INTO t SELECT g, repeat('x', 200) FROM generate_series(1, 20000) g", dbname="crash")
    cdc.wait_until(lambda: len(cdc.events(TOPIC)) >= 2000, what="part of the replay")
    cdc.kill()
    cdc2 = CdcProcess(config, tmp_path).start()
    try:
        cdc2.wait_until(lambda: "streaming from slot" in cdc2.log(), what="the restart to stream")
        cdc2.wait_until(lambda: len({e["key"]["payload"]["id"] for e in cdc2.events(TOPIC)}) >= 20000, 90,
                        "every row after the restart")
    finally:
        assert cdc2.terminate() == 0
    ids = [e["key"]["payload"]["id"] for e in cdc2.events(TOPIC)]
    assert set(ids) == set(range(1, 20001))
    assert len(ids) - 20000 <= 500, "more than one unacknowledged batch was replayed"
