"""SQL Server (the stand-in) through the ``cdc`` source: the snapshot in parallel chunks, streaming, AvailableNow."""

from __future__ import annotations

from change_table_spark import KeyedState, available_now, caught_up, chunked_read, standin_options

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
