"""SQL Server (the stand-in) through the ``cdc`` source: the snapshot in parallel chunks, streaming, AvailableNow."""

from __future__ import annotations

import time

import orjson

from cdc_sqlserver.odbc import STANDIN_DRIVER
from cdc_sqlserver.standin.testing import standin  # noqa: F401  (fixture)

ROWS = 1200


def _props(standin) -> dict[str, str]:
    """Spark options: the stand-in's properties, with the driver that routes Spark's Python workers to it."""
    props = {k: str(v) for k, v in standin.properties(prefix="ms").items()}
    props.pop("connector.class", None)
    return {**props, "connector": "sqlserver", "driver.Driver": STANDIN_DRIVER, "poll.interval.ms": "100"}


def test_parallel_chunks_then_available_now_with_writes_before_and_during_it(spark, standin, tmp_path):
    standin.create_table("CREATE TABLE dbo.items (id INT NOT NULL PRIMARY KEY, v INT NOT NULL)")
    standin.execute(f"INSERT INTO dbo.items SELECT g, 0 FROM generate_series(1, {ROWS}) g")
    standin.enable_db()
    standin.enable_table("dbo", "items")
    standin.agent.start()
    props = {**_props(standin), "table": "dbo.items", "snapshotChunkRows": "200"}

    df = spark.read.format("cdc").options(**props).load()
    assert df.rdd.getNumPartitions() >= 5
    rows = [orjson.loads(r.value)["payload"] for r in df.select("value").collect()]
    assert sorted(p["after"]["id"] for p in rows) == list(range(1, ROWS + 1))
    markers = [p["source"]["snapshot"] for p in rows]
    assert markers.count("first") == 1 and markers.count("last") == 1

    # Streaming: changes committed before the query starts come through the chunks or the stream (the
    # handoff), once each; AvailableNow ends at the max LSN of its start, a second run catches up.
    state: dict[int, int] = {}

    def apply(batch, _batch_id):
        for r in batch.select("value").collect():
            if r.value is None:
                continue
            p = orjson.loads(r.value)["payload"]
            if p["op"] == "d":
                state.pop(p["before"]["id"], None)
            else:
                state[p["after"]["id"]] = p["after"]["v"]

    for n in range(100):
        standin.execute(f"UPDATE dbo.items SET v = v + 1 WHERE id = {1 + (n * 37) % ROWS}")
    standin.execute("DELETE FROM dbo.items WHERE id = 5")

    def run():
        return (spark.readStream.format("cdc").options(**props).load().writeStream.foreachBatch(apply)
                .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())

    query = run()
    late = 0
    while query.isActive and late < 30:
        standin.execute(f"INSERT INTO dbo.items VALUES ({ROWS + 1 + late}, 0)")
        late += 1
        time.sleep(0.05)
    assert query.awaitTermination(120), "Trigger.AvailableNow did not stop"
    assert query.exception() is None
    assert 5 not in state and all(state.get(1 + (n * 37) % ROWS, 0) >= 1 for n in range(100))
    standin.wait_captured()
    query = run()
    assert query.awaitTermination(120), "the second Trigger.AvailableNow did not stop"
    assert query.exception() is None
    assert state == {r[0]: r[1] for r in standin.execute("SELECT id, v FROM dbo.items")}


def test_a_varchar_key_is_read_in_parallel_key_ranges_then_streamed(spark, standin, tmp_path):
    """A table keyed by VARCHAR is split at sampled keys (not read whole); the handoff keeps the final state."""
    standin.create_table("CREATE TABLE dbo.codes (code VARCHAR(20) NOT NULL PRIMARY KEY, v INT NOT NULL)")
    standin.execute("INSERT INTO dbo.codes SELECT 'c-' || g, 0 FROM generate_series(1, 600) g")
    standin.enable_db()
    standin.enable_table("dbo", "codes")
    standin.agent.start()
    props = {**_props(standin), "table": "dbo.codes", "snapshotChunkRows": "100"}

    df = spark.read.format("cdc").options(**props).load()
    assert df.rdd.getNumPartitions() >= 6
    rows = [orjson.loads(r.value)["payload"] for r in df.select("value").collect()]
    assert sorted(p["after"]["code"] for p in rows) == sorted(f"c-{g}" for g in range(1, 601))

    state: dict[str, int] = {}

    def apply(batch, _batch_id):
        for r in batch.select("value").collect():
            if r.value is not None:
                p = orjson.loads(r.value)["payload"]
                if p["op"] == "d":
                    state.pop(p["before"]["code"], None)
                else:
                    state[p["after"]["code"]] = p["after"]["v"]

    for n in range(40):
        standin.execute(f"UPDATE dbo.codes SET v = v + 1 WHERE code = 'c-{1 + (n * 37) % 600}'")
    standin.execute("DELETE FROM dbo.codes WHERE code = 'c-5'")

    def run():
        return (spark.readStream.format("cdc").options(**props).load().writeStream.foreachBatch(apply)
                .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())

    query = run()
    late = 0
    while query.isActive and late < 20:
        standin.execute(f"UPDATE dbo.codes SET v = v + 1 WHERE code = 'c-{2 + late * 29}'")
        late += 1
        time.sleep(0.05)
    assert query.awaitTermination(120) and query.exception() is None
    standin.wait_captured()
    query = run()
    assert query.awaitTermination(120) and query.exception() is None
    assert state == {r[0]: r[1] for r in standin.execute("SELECT code, v FROM dbo.codes")}
