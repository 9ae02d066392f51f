"""Db2 (the stand-in) through the ``cdc`` source: the snapshot in parallel chunks, streaming, AvailableNow."""

from __future__ import annotations

from change_table_spark import KeyedState, available_now, caught_up, chunked_read, standin_options

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
