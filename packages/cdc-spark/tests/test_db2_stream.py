"""Db2 (the stand-in) through the ``cdc`` source: the snapshot in parallel chunks, streaming, AvailableNow."""

from __future__ import annotations

import time

import orjson

from cdc_db2.driver import STANDIN_DRIVER
from cdc_db2.standin.testing import standin  # noqa: F401  (fixture)

ROWS = 1200
ITEMS = '"MYSCHEMA"."ITEMS"'


def _props(standin) -> dict[str, str]:
    """Spark options: the stand-in's properties, with the driver that routes Spark's Python workers to it."""
    props = {k: str(v) for k, v in standin.properties(prefix="db").items()}
    props.pop("connector.class", None)
    return {**props, "connector": "db2", "driver.Driver": STANDIN_DRIVER, "poll.interval.ms": "100"}


def test_parallel_chunks_then_available_now_with_writes_before_and_during_it(spark, standin, tmp_path):
    standin.create_table("MYSCHEMA", "ITEMS", [("ID", "INTEGER NOT NULL"), ("V", "INTEGER NOT NULL")], key=["ID"])
    standin.execute(f"INSERT INTO {ITEMS} SELECT g, 0 FROM generate_series(1, {ROWS}) g")
    standin.add_table("MYSCHEMA", "ITEMS")
    standin.agent.start()
    props = {**_props(standin), "table": "MYSCHEMA.ITEMS", "snapshotChunkRows": "200"}

    df = spark.read.format("cdc").options(**props).load()
    assert df.rdd.getNumPartitions() >= 5
    rows = [orjson.loads(r.value)["payload"] for r in df.select("value").collect()]
    assert sorted(p["after"]["ID"] for p in rows) == list(range(1, ROWS + 1))
    markers = [p["source"]["snapshot"] for p in rows]
    assert markers.count("first") == 1 and markers.count("last") == 1

    # Streaming: changes committed before the query starts come through the chunks or the stream (the
    # handoff), once each; AvailableNow ends at the highest synchpoint of its start, a second run catches up.
    state: dict[int, int] = {}

    def apply(batch, _batch_id):
        for r in batch.select("value").collect():
            if r.value is None:
                continue
            p = orjson.loads(r.value)["payload"]
            if p["op"] == "d":
                state.pop(p["before"]["ID"], None)
            else:
                state[p["after"]["ID"]] = p["after"]["V"]

    for n in range(100):
        standin.execute(f'UPDATE {ITEMS} SET "V" = "V" + 1 WHERE "ID" = {1 + (n * 37) % ROWS}')
    standin.execute(f'DELETE FROM {ITEMS} WHERE "ID" = 5')

    def run():
        return (spark.readStream.format("cdc").options(**props).load().writeStream.foreachBatch(apply)
                .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())

    query = run()
    late = 0
    while query.isActive and late < 30:
        standin.execute(f"INSERT INTO {ITEMS} VALUES ({ROWS + 1 + late}, 0)")
        late += 1
        time.sleep(0.05)
    assert query.awaitTermination(120), "Trigger.AvailableNow did not stop"
    assert query.exception() is None
    assert 5 not in state and all(state.get(1 + (n * 37) % ROWS, 0) >= 1 for n in range(100))
    standin.wait_captured()
    query = run()
    assert query.awaitTermination(120), "the second Trigger.AvailableNow did not stop"
    assert query.exception() is None
    assert state == {r[0]: r[1] for r in standin.execute(f'SELECT "ID", "V" FROM {ITEMS}')}
