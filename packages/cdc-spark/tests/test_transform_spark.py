"""transforms= on the Spark source: snapshot chunks and the stream through the same chain as the engine."""

from __future__ import annotations

import orjson
import pytest

from cdc_core.errors import ConfigError
from cdc_spark.options import parse_options
from spark_helpers import create_items, wait_until

CHAIN = {"transforms": "unwrap,route",
         "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
         "transforms.unwrap.add.fields": "op",
         "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
         "transforms.route.regex": r"sp\.public\.(.*)", "transforms.route.replacement": "flat.$1"}


def test_batch_read_applies_the_chain_to_every_chunk(spark, pg_props, pg_server, pg_db):
    create_items(pg_server, pg_db, 900)
    pg_server.execute("ANALYZE", dbname=pg_db)
    df = spark.read.format("cdc").options(**pg_props, **CHAIN, snapshotChunkRows="300").load()
    rows = df.select("topic", "value").collect()
    assert {r.topic for r in rows} == {"flat.items"} and len(rows) == 900
    values = [orjson.loads(r.value) for r in rows]
    assert {v["schema"]["name"] for v in values} == {"sp.public.items.Value"}
    assert sorted(v["payload"]["id"] for v in values) == list(range(1, 901))
    assert {v["payload"]["__op"] for v in values} == {"r"}


def test_stream_applies_the_chain_and_dropped_deletes_still_advance(spark, pg_props, pg_server, pg_db, tmp_path):
    create_items(pg_server, pg_db, 5)
    seen: list[dict] = []

    def on_batch(batch, _):
        seen.extend(orjson.loads(r.value) | {"topic": r.topic} for r in batch.select("topic", "value").collect()
                    if r.value is not None)

    stream = spark.readStream.format("cdc").options(**pg_props, **CHAIN).load()
    query = (stream.writeStream.foreachBatch(on_batch).option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(processingTime="200 milliseconds").start())
    try:
        wait_until(lambda: len(seen) >= 5, what="the snapshot")
        pg_server.execute("DELETE FROM items WHERE id = 1", dbname=pg_db)  # dropped by ExtractNewRecordState
        pg_server.execute("INSERT INTO items VALUES (6, 'six', 6)", dbname=pg_db)
        wait_until(lambda: any(v["payload"]["id"] == 6 for v in seen), what="the streamed insert")
    finally:
        query.stop()
    streamed = [v for v in seen if v["payload"]["__op"] != "r"]
    assert [(v["topic"], v["payload"]["id"], v["payload"]["__op"]) for v in streamed] == [("flat.items", 6, "c")]


def test_transforms_with_typed_columns_are_refused(pg_props):
    with pytest.raises(ConfigError) as e:
        parse_options({**pg_props, **CHAIN, "table": "public.items"})
    assert any(p.startswith("transforms: cannot be combined with table") for p in e.value.problems)
