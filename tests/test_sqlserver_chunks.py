"""SQL Server's snapshot chunks capability (what cdc-spark reads in parallel) on the stand-in, without Spark."""

from __future__ import annotations

from cdc_core.config import Config
from cdc_core.spi.chunks import snapshot_chunks_for
from cdc_sqlserver.connector import SqlServerConnector
from cdc_sqlserver.standin.testing import standin  # noqa: F401  (fixture)

ROWS = 100


def _read(cls, config, chunks):
    return [c for chunk in chunks for batch in cls.read_chunk(config, chunk) for c in batch if hasattr(c, "after")]


def test_non_integer_keys_are_split_into_key_ranges_that_cover_every_row_once(standin):
    standin.create_table("CREATE TABLE dbo.codes (code VARCHAR(20) NOT NULL PRIMARY KEY, v INT NOT NULL)")
    standin.create_table("CREATE TABLE dbo.pairs (region VARCHAR(10) NOT NULL, n INT NOT NULL, v INT NOT NULL)")
    standin.execute("ALTER TABLE dbo.pairs ADD PRIMARY KEY (region, n)")  # the stand-in's T-SQL DDL has no table-level keys
    standin.create_table("CREATE TABLE dbo.guids (id UNIQUEIDENTIFIER NOT NULL PRIMARY KEY, v INT NOT NULL)")
    standin.execute(f"INSERT INTO dbo.codes SELECT 'c-' || g, g FROM generate_series(1, {ROWS}) g")
    standin.execute(f"INSERT INTO dbo.pairs SELECT CASE WHEN g % 2 = 0 THEN 'east' ELSE 'west' END, g / 2, g "
                    f"FROM generate_series(1, {ROWS}) g")
    standin.execute(f"INSERT INTO dbo.guids SELECT gen_random_uuid(), g FROM generate_series(1, {ROWS}) g")
    standin.enable_db()
    for name in ("codes", "pairs", "guids"):
        standin.enable_table("dbo", name)
    standin.agent.start()
    cls = snapshot_chunks_for(SqlServerConnector)
    config = Config(standin.properties())
    capability = cls(config, None)
    plan = capability.open(for_streaming=True, tables=None, chunk_rows=30)
    by_table: dict[str, list] = {}
    for chunk in plan.chunks:
        by_table.setdefault(chunk.table, []).append(chunk)
    assert {t: len(c) for t, c in by_table.items()} == {"dbo.codes": 4, "dbo.guids": 4, "dbo.pairs": 4}
    for table, chunks in by_table.items():
        rows = _read(cls, config, chunks)
        values = sorted(r.after[-1] for r in rows)
        assert values == list(range(1, ROWS + 1)), table  # every row once, whatever the key order
        sizes = [len(_read(cls, config, [c])) for c in chunks]
        assert sizes == [30, 30, 30, 10], table
    markers = [r.source["snapshot"] for r in _read(cls, config, plan.chunks)]
    assert markers.count("first") == 1 and markers.count("last") == 1


def test_a_table_of_exactly_whole_chunks_has_no_empty_last_chunk(standin):
    standin.create_table("CREATE TABLE dbo.codes (code VARCHAR(20) NOT NULL PRIMARY KEY, v INT NOT NULL)")
    standin.execute("INSERT INTO dbo.codes SELECT 'c-' || g, g FROM generate_series(1, 90) g")
    standin.enable_db()
    standin.enable_table("dbo", "codes")
    standin.agent.start()
    cls = snapshot_chunks_for(SqlServerConnector)
    config = Config(standin.properties())
    plan = cls(config, None).open(for_streaming=False, tables=None, chunk_rows=30)
    assert [len(_read(cls, config, [c])) for c in plan.chunks] == [30, 30, 30]
    assert _read(cls, config, plan.chunks)[-1].source["snapshot"] == "last"
