"""spark.read.format("cdc"): a consistent snapshot as a DataFrame, read in chunks by executors."""

from __future__ import annotations

import orjson

from cdc_core.engine import Engine
from cdc_core.serializers.json import JsonSerializer
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from spark_helpers import create_items, source_rows


def test_batch_read_is_the_snapshot_in_parallel_chunks(spark, pg_props, pg_server, pg_db):
    create_items(pg_server, pg_db, 3000)
    pg_server.execute("CREATE TABLE public.pairs (a text, b int, v text, PRIMARY KEY (a, b))", dbname=pg_db)
    pg_server.execute("INSERT INTO public.pairs SELECT 'k' || (g % 7), g, 'v' FROM generate_series(1, 1200) g", dbname=pg_db)
    pg_server.execute("CREATE TABLE public.heap (x int, y text)", dbname=pg_db)
    pg_server.execute("INSERT INTO public.heap SELECT g, repeat('y', 200) FROM generate_series(1, 1500) g", dbname=pg_db)
    pg_server.execute("ANALYZE", dbname=pg_db)
    df = spark.read.format("cdc").options(**pg_props, snapshotChunkRows="400").load()
    assert df.rdd.getNumPartitions() > 6
    counts = {r["topic"]: r["count"] for r in df.groupBy("topic").count().collect()}
    assert counts == {"sp.public.items": 3000, "sp.public.pairs": 1200, "sp.public.heap": 1500}
    assert {r.op for r in df.select("op").distinct().collect()} == {"r"}
    pairs = {(r["a"], r["b"]) for r in (orjson.loads(v.value)["payload"]["after"] for v in
                                        df.where("topic = 'sp.public.pairs'").select("value").collect())}
    assert len(pairs) == 1200
    heap = [orjson.loads(v.value)["payload"]["after"]["x"] for v in df.where("topic = 'sp.public.heap'").select("value").collect()]
    assert sorted(heap) == list(range(1, 1501))
    markers = [orjson.loads(v.value)["payload"]["source"]["snapshot"] for v in df.select("value").collect()]
    assert markers.count("first") == 1 and markers.count("last") == 1


def test_rows_are_what_the_engine_writes(spark, pg_props, pg_server, pg_db):
    create_items(pg_server, pg_db, 50)
    config = {k: v for k, v in pg_props.items() if k != "connector"} | {
        "connector.class": "postgres", "snapshot.mode": "initial_only", "slot.drop.on.stop": "true"}
    records = []
    Engine(config, offset_store=MemoryOffsetStore()).run(records.extend)
    expected = {}
    records = [r for r in records if r.topic == "sp.public.items"]  # not heartbeats: a snapshot holds table rows
    for r, s in zip(records, JsonSerializer().serialize(records)):
        value = orjson.loads(s.value)
        expected[s.key.decode()] = (value["schema"], value["payload"]["after"], value["payload"]["op"])
    rows = spark.read.format("cdc").options(**pg_props).load().collect()
    got = {}
    for row in rows:
        value = orjson.loads(row.value)
        got[row.key] = (value["schema"], value["payload"]["after"], value["payload"]["op"])
        assert row.topic == "sp.public.items" and row.op == "r" and row.ts_ms == value["payload"]["ts_ms"]
    assert got == expected


def test_typed_columns_for_one_table(spark, pg_props, pg_server, pg_db):
    create_items(pg_server, pg_db, 20)
    pg_server.execute("CREATE TABLE public.other (id int PRIMARY KEY)", dbname=pg_db)
    pg_server.execute("INSERT INTO public.other VALUES (1)", dbname=pg_db)
    df = spark.read.format("cdc").options(**pg_props, table="public.items").load()
    assert dict(df.select("after.*").dtypes) == {"id": "int", "name": "string", "qty": "decimal(10,2)"}
    got = {r.id: (r.name, r.qty) for r in df.select("after.*").collect()}
    assert got == source_rows(pg_server, pg_db)


def test_markers_when_a_tables_edge_chunks_are_empty(spark, pg_props, pg_server, pg_db):
    ex = lambda q: pg_server.execute(q, dbname=pg_db)  # noqa: E731
    ex("CREATE TABLE public.a_heap (x int, y text) WITH (autovacuum_enabled = false)")
    ex("INSERT INTO public.a_heap SELECT g, repeat('y', 200) FROM generate_series(1, 3000) g")
    ex("DELETE FROM public.a_heap WHERE x <= 1600 OR x > 2000")  # the first and the last page ranges are empty
    ex("ANALYZE public.a_heap")
    ex("CREATE TABLE public.b_keys (id int PRIMARY KEY)")
    ex("INSERT INTO public.b_keys SELECT g FROM generate_series(1, 1000) g")
    ex("ANALYZE public.b_keys")
    df = spark.read.format("cdc").options(**pg_props, snapshotChunkRows="100").load()
    assert df.rdd.getNumPartitions() > 10
    marks: dict[str, dict[str, list]] = {}
    for row in df.select("value").collect():
        payload = orjson.loads(row.value)["payload"]
        row_id = payload["after"].get("x", payload["after"].get("id"))
        marks.setdefault(payload["source"]["table"], {}).setdefault(payload["source"]["snapshot"], []).append(row_id)
    heap, keys = marks["a_heap"], marks["b_keys"]
    assert heap["first"] == [1601] and heap["last_in_data_collection"] == [2000]
    assert keys["first_in_data_collection"] == [1] and keys["last"] == [1000]
    assert sum(len(v) for v in heap.values()) == 400 and sum(len(v) for v in keys.values()) == 1000
