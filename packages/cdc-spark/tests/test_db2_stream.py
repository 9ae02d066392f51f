"""Db2 (the stand-in) through the ``cdc`` source: the snapshot in parallel chunks, streaming, AvailableNow."""

from __future__ import annotations

import time

import orjson
from change_table_spark import (ChangeLog, KeyedState, Writer, assert_each_version_once, available_now, caught_up,
                                chunked_read, standin_options, write_through_snapshot)

from cdc_db2.driver import STANDIN_DRIVER
from cdc_db2.standin.testing import standin  # noqa: F401  (fixture)

ROWS = 1200
ITEMS = '"MYSCHEMA"."ITEMS"'


def test_parallel_chunks_then_available_now_with_writes_before_and_during_it(spark, standin, tmp_path):
    standin.create_table("MYSCHEMA", "ITEMS", [("ID", "INTEGER NOT NULL"), ("V", "INTEGER NOT NULL")], key=["ID"])
    standin.execute(f"INSERT INTO {ITEMS} SELECT g, 0 FROM generate_series(1, {ROWS}) g")
    standin.add_table("MYSCHEMA", "ITEMS")
    standin.agent.start()
    props = standin_options(standin, "db", "db2", STANDIN_DRIVER, "MYSCHEMA.ITEMS", 200)

    partitions, keys, markers = chunked_read(spark, props, "ID")
    assert partitions >= 5 and keys == list(range(1, ROWS + 1))
    assert markers.count("first") == 1 and markers.count("last") == 1

    # Streaming: changes committed before the query starts come through the chunks or the stream (the
    # handoff), once each; AvailableNow ends at the highest synchpoint of its start, a second run catches up.
    state = KeyedState("ID", "V")
    for n in range(100):
        standin.execute(f'UPDATE {ITEMS} SET "V" = "V" + 1 WHERE "ID" = {1 + (n * 37) % ROWS}')
    standin.execute(f'DELETE FROM {ITEMS} WHERE "ID" = 5')

    available_now(spark, props, state, tmp_path / "ck",
                  lambda late: standin.execute(f"INSERT INTO {ITEMS} VALUES ({ROWS + 1 + late}, 0)"), 30)
    assert 5 not in state.rows and all(state.rows.get(1 + (n * 37) % ROWS, 0) >= 1 for n in range(100))
    assert caught_up(spark, standin, props, state, tmp_path / "ck") == dict(
        standin.execute(f'SELECT "ID", "V" FROM {ITEMS}'))


def _items_sql(kind: str, key: int) -> str:
    if kind == "update":
        return f'UPDATE {ITEMS} SET "V" = "V" + 1 WHERE "ID" = {key}'
    if kind == "insert":
        return f"INSERT INTO {ITEMS} VALUES ({key}, 0)"
    return f'DELETE FROM {ITEMS} WHERE "ID" = {key}'


def _items(standin, rows: int) -> dict[str, str]:
    standin.create_table("MYSCHEMA", "ITEMS", [("ID", "INTEGER NOT NULL"), ("V", "INTEGER NOT NULL")], key=["ID"])
    standin.execute(f"INSERT INTO {ITEMS} SELECT g, 0 FROM generate_series(1, {rows}) g")
    standin.add_table("MYSCHEMA", "ITEMS")
    standin.agent.start()
    return standin_options(standin, "db", "db2", STANDIN_DRIVER, "MYSCHEMA.ITEMS", 100)


def test_a_batch_read_under_concurrent_writes_is_one_consistent_snapshot(spark, standin):
    """The holder keeps its SHARE locks until every chunk reported its read: transfers between rows of different
    chunks, committed all the while, never show half done (the sum stays)."""
    rows = 600
    props = _items(standin, rows)
    standin.execute(f'UPDATE {ITEMS} SET "V" = 100')

    def transfer(kind: str, key: int) -> str:  # every step moves one unit from a row to one in another chunk
        return (f'UPDATE {ITEMS} SET "V" = "V" + CASE WHEN "ID" = {key} THEN -1 ELSE 1 END '
                f'WHERE "ID" IN ({key}, {1 + (key + rows // 2) % rows})')

    writer = Writer(standin.conninfo, transfer, list(range(1, rows + 1)), lambda n: 1 + n % rows).start()
    try:
        time.sleep(0.2)
        df = spark.read.format("cdc").options(**props).load()
        values = [orjson.loads(r.value)["payload"]["after"]["V"] for r in df.select("value").collect()]
        assert len(values) == rows and sum(values) == 100 * rows
    finally:
        assert writer.stop() > 0


def test_the_handoff_gives_every_change_once_under_concurrent_writes(spark, standin, tmp_path):
    """Writers run through the whole snapshot: each row's versions come exactly once (chunks, then the stream from
    the USER signal's LSN), none missing, none twice, and the run ends equal to the table."""
    rows = 600
    props = _items(standin, rows)
    log = ChangeLog("ID", "V")
    writer = Writer(standin.conninfo, _items_sql, list(range(1, rows + 1)), lambda n: rows + 1 + n).start()
    try:
        time.sleep(0.3)
        available_now(spark, props, log, tmp_path / "ck", during=write_through_snapshot(writer, log, rows))
    finally:
        steps = writer.stop()
    assert steps > 20
    standin.wait_captured()
    available_now(spark, props, log, tmp_path / "ck")
    assert_each_version_once(log.events, dict(standin.execute(f'SELECT "ID", "V" FROM {ITEMS}')))
