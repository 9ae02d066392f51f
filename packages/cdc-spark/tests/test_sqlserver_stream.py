"""SQL Server (the stand-in) through the ``cdc`` source: the snapshot in parallel chunks, streaming, AvailableNow."""

from __future__ import annotations

import time

from change_table_spark import (ChangeLog, KeyedState, Writer, assert_each_version_once, available_now, caught_up,
                                chunked_read, standin_options, write_through_snapshot)

from cdc_sqlserver.odbc import STANDIN_DRIVER
from cdc_sqlserver.standin.testing import standin  # noqa: F401  (fixture)

ROWS = 1200


def _captured(standin, table: str, columns: str, rows: str, chunk_rows: int) -> dict[str, str]:
    """``dbo.<table>`` created with ``rows`` in it, captured by the running agent: its Spark options."""
    standin.create_table(f"CREATE TABLE dbo.{table} ({columns})")
    standin.execute(f"INSERT INTO dbo.{table} {rows}")
    standin.enable_db()
    standin.enable_table("dbo", table)
    standin.agent.start()
    return standin_options(standin, "ms", "sqlserver", STANDIN_DRIVER, f"dbo.{table}", chunk_rows)


def test_parallel_chunks_then_available_now_with_writes_before_and_during_it(spark, standin, tmp_path):
    props = _captured(standin, "items", "id INT NOT NULL PRIMARY KEY, v INT NOT NULL",
                      f"SELECT g, 0 FROM generate_series(1, {ROWS}) g", 200)

    partitions, keys, markers = chunked_read(spark, props, "id")
    assert partitions >= 5 and keys == list(range(1, ROWS + 1))
    assert markers.count("first") == 1 and markers.count("last") == 1

    # Streaming: changes committed before the query starts come through the chunks or the stream (the
    # handoff), once each; AvailableNow ends at the max LSN of its start, a second run catches up.
    state = KeyedState("id", "v")
    for n in range(100):
        standin.execute(f"UPDATE dbo.items SET v = v + 1 WHERE id = {1 + (n * 37) % ROWS}")
    standin.execute("DELETE FROM dbo.items WHERE id = 5")

    available_now(spark, props, state, tmp_path / "ck",
                  lambda late: standin.execute(f"INSERT INTO dbo.items VALUES ({ROWS + 1 + late}, 0)"), 30)
    assert 5 not in state.rows and all(state.rows.get(1 + (n * 37) % ROWS, 0) >= 1 for n in range(100))
    assert caught_up(spark, standin, props, state, tmp_path / "ck") == dict(
        standin.execute("SELECT id, v FROM dbo.items"))


def test_a_varchar_key_is_read_in_parallel_key_ranges_then_streamed(spark, standin, tmp_path):
    """A table keyed by VARCHAR is split at sampled keys (not read whole); the handoff keeps the final state."""
    props = _captured(standin, "codes", "code VARCHAR(20) NOT NULL PRIMARY KEY, v INT NOT NULL",
                      "SELECT 'c-' || g, 0 FROM generate_series(1, 600) g", 100)

    partitions, keys, _ = chunked_read(spark, props, "code")
    assert partitions >= 6 and keys == sorted(f"c-{g}" for g in range(1, 601))

    state = KeyedState("code", "v")
    for n in range(40):
        standin.execute(f"UPDATE dbo.codes SET v = v + 1 WHERE code = 'c-{1 + (n * 37) % 600}'")
    standin.execute("DELETE FROM dbo.codes WHERE code = 'c-5'")

    available_now(spark, props, state, tmp_path / "ck",
                  lambda late: standin.execute(f"UPDATE dbo.codes SET v = v + 1 WHERE code = 'c-{2 + late * 29}'"), 20)
    assert caught_up(spark, standin, props, state, tmp_path / "ck") == dict(
        standin.execute("SELECT code, v FROM dbo.codes"))


def _sql(table: str, column: str, quoted: bool):
    """The writer's statements for ``dbo.<table>`` keyed by ``column`` (``quoted``: a string key)."""
    def statement(kind: str, key) -> str:
        literal = f"'{key}'" if quoted else str(key)
        if kind == "update":
            return f"UPDATE dbo.{table} SET v = v + 1 WHERE {column} = {literal}"
        if kind == "insert":
            return f"INSERT INTO dbo.{table} VALUES ({literal}, 0)"
        return f"DELETE FROM dbo.{table} WHERE {column} = {literal}"
    return statement


def _every_change_once(spark, standin, props, tmp_path, table: str, column: str, keys: list, new_key,
                       quoted: bool) -> None:
    """A writer runs through the snapshot and the first AvailableNow run; each row's versions came once each."""
    log = ChangeLog(column, "v")
    writer = Writer(standin.conninfo, _sql(table, column, quoted), keys, new_key).start()
    try:
        time.sleep(0.3)
        available_now(spark, props, log, tmp_path / "ck", during=write_through_snapshot(writer, log, len(keys)))
    finally:
        steps = writer.stop()
    assert steps > 20
    standin.wait_captured()
    available_now(spark, props, log, tmp_path / "ck")
    assert_each_version_once(log.events, dict(standin.execute(f"SELECT {column}, v FROM dbo.{table}")))


def test_integer_key_chunks_hand_off_every_change_once_under_concurrent_writes(spark, standin, tmp_path):
    """Each chunk reports the log's end read with its range held: no change is applied twice or lost."""
    props = _captured(standin, "items", "id INT NOT NULL PRIMARY KEY, v INT NOT NULL",
                      "SELECT g, 0 FROM generate_series(1, 600) g", 100)
    _every_change_once(spark, standin, props, tmp_path, "items", "id", list(range(1, 601)), lambda n: 601 + n, False)


def test_sampled_key_chunks_hand_off_every_change_once_under_concurrent_writes(spark, standin, tmp_path):
    """VARCHAR keys in sampled ranges: the server places the changed keys in their chunks, so the handoff is exact
    for each chunk, not only up to the table's earliest read."""
    props = _captured(standin, "codes", "code VARCHAR(20) NOT NULL PRIMARY KEY, v INT NOT NULL",
                      "SELECT 'c-' || g, 0 FROM generate_series(1, 600) g", 100)
    _every_change_once(spark, standin, props, tmp_path, "codes", "code", [f"c-{g}" for g in range(1, 601)],
                       lambda n: f"n-{n}", True)
