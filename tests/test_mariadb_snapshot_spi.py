"""The snapshot SPIs on MariaDB: custom Snapshotter, SnapshotQuery and SnapshotLock plugins, the locking modes.

``snapshot.mode``, ``snapshot.query.mode`` and ``snapshot.locking.mode`` are all plugins of the
core's snapshot SPIs; the locking modes are SnapshotLocks the MySQL plugin registers. The modes'
start decisions are the snapshot scenarios (``tests/data/mariadb_scenarios/snapshot.yaml``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import pymysql
import pytest

from cdc_core.errors import ConfigError
from cdc_core.hookspecs import hookimpl
from cdc_core.plugins import PluginRegistry
from mariadb_cdc import EngineThread, connector_config, count_ops


def _rows(server, db: str, table: str, n: int) -> None:
    server.execute([f"CREATE TABLE {table} (id INT PRIMARY KEY, v INT NOT NULL DEFAULT 0)",
                    f"INSERT INTO {table} (id) SELECT seq FROM seq_1_to_{n}"], database=db)


def _run_to_end(config: dict, plugins: Any = None) -> EngineThread:
    engine = EngineThread(config, plugins=plugins).start()
    assert engine.join() is None, engine.error
    return engine


class SkipOddTables:
    """A SnapshotQuery that leaves out tables whose name ends in ``_skip`` and orders the others by id descending."""

    name: ClassVar[str] = "skip-odd"

    def configure(self, config: Any) -> None:
        """Nothing to configure."""

    def snapshot_query(self, table: Any, columns: list[str], quote: Any) -> str | None:
        """None for ``*_skip`` tables."""
        if table.table.endswith("_skip"):
            return None
        return f"SELECT {', '.join(columns)} FROM {quote(table)} ORDER BY id DESC"


class PerTableLock:
    """A SnapshotLock giving one ``LOCK TABLES ... READ`` per table (merged into one statement by the connector)."""

    name: ClassVar[str] = "per-table"
    tables: ClassVar[list[str]] = []

    def configure(self, config: Any) -> None:
        """Nothing to configure."""

    def table_lock_statement(self, lock_timeout_ms: int, table: Any, quote: Any) -> str | None:
        """``LOCK TABLES <table> READ``."""
        PerTableLock.tables.append(quote(table))
        return f"LOCK TABLES {quote(table)} READ"


class _TestPlugins:
    @hookimpl
    def register_snapshot_queries(self) -> list[type]:
        return [SkipOddTables]

    @hookimpl
    def register_snapshot_locks(self) -> list[type]:
        return [PerTableLock]


@pytest.fixture
def plugins() -> PluginRegistry:
    """The installed plugins plus this module's custom SnapshotQuery and SnapshotLock."""
    registry = PluginRegistry()
    registry.register(_TestPlugins(), name="mariadb-snapshot-spi-tests")
    return registry


def test_custom_snapshotter_from_an_entry_point(mariadb_server, mariadb_db):
    """snapshot.mode=custom with the example ``export`` snapshotter: a full snapshot at every start, no streaming."""
    _rows(mariadb_server, mariadb_db, "t", 6)
    config = connector_config(mariadb_server, mariadb_db, **{"snapshot.mode": "custom",
                                                             "snapshot.mode.custom.name": "export"})
    first = _run_to_end(config)
    again = EngineThread(config, offsets=first.offsets, history=first.history).start()
    assert again.join() is None
    assert count_ops(first.records, "r") == 6 and count_ops(again.records, "r") == 6


def test_custom_snapshot_query_skips_and_orders(mariadb_server, mariadb_db, plugins):
    """snapshot.query.mode=custom: a table the query skips has no snapshot rows but still streams."""
    _rows(mariadb_server, mariadb_db, "t", 3)
    _rows(mariadb_server, mariadb_db, "t_skip", 3)
    config = connector_config(mariadb_server, mariadb_db, **{"snapshot.query.mode": "custom",
                                                             "snapshot.query.mode.custom.name": "skip-odd"})
    engine = EngineThread(config, plugins=plugins).start()
    try:
        engine.wait(lambda rs: count_ops(rs, "r") == 3 and engine.engine.metrics.streaming.connected, "the snapshot")
        mariadb_server.execute("INSERT INTO t_skip (id) VALUES (4)", database=mariadb_db)
        engine.wait(lambda rs: count_ops(rs, "c", "t_skip") == 1, "the streamed insert")
    finally:
        engine.stop()
    assert [r.key["id"] for r in engine.records if r.value and r.value.get("op") == "r"] == [3, 2, 1]
    assert count_ops(engine.records, "r", "t_skip") == 0


def test_custom_snapshot_lock_per_table(mariadb_server, mariadb_db, plugins):
    """snapshot.locking.mode=custom: per-table LOCK TABLES statements become one; the snapshot reads under them."""
    _rows(mariadb_server, mariadb_db, "a", 2)
    _rows(mariadb_server, mariadb_db, "b", 2)
    PerTableLock.tables.clear()
    engine = _run_to_end(connector_config(mariadb_server, mariadb_db, **{
        "snapshot.mode": "initial_only", "snapshot.locking.mode": "custom",
        "snapshot.locking.mode.custom.name": "per-table"}), plugins)
    assert count_ops(engine.records, "r") == 4
    assert PerTableLock.tables == [f"`{mariadb_db}`.`a`", f"`{mariadb_db}`.`b`"]


def _write_during_rows(server, db: str, mode: str) -> BaseException | None:
    """Insert a row while the snapshot reads rows under ``mode``; the insert's error (lock wait timeout), if any."""
    _rows(server, db, "t", 2000)
    config = connector_config(server, db, **{"snapshot.locking.mode": mode, "max.batch.size": 100,
                                             "max.queue.size": 200, "snapshot.fetch.size": 100})
    engine = EngineThread(config)
    engine.slow = 0.1  # 20 batches: the snapshot reads rows for about 2 s
    engine.start()
    try:
        engine.wait(lambda rs: count_ops(rs, "r") >= 100, "the first snapshot rows")
        assert engine.engine.metrics.snapshot.running
        try:
            server.execute(["SET SESSION lock_wait_timeout = 1", "INSERT INTO t (id) VALUES (100000)"], database=db)
            return None
        except pymysql.err.OperationalError as e:
            assert engine.engine.metrics.snapshot.running, "the snapshot ended before the write timed out"
            return e
    finally:
        engine.stop()


def test_minimal_lock_lets_writes_through_while_rows_are_read(mariadb_server, mariadb_db):
    """minimal: the global read lock is gone once the definitions are read."""
    assert _write_during_rows(mariadb_server, mariadb_db, "minimal") is None


def test_extended_lock_blocks_writes_until_the_snapshot_ends(mariadb_server, mariadb_db):
    """extended: writes wait for the whole snapshot (here: past lock_wait_timeout)."""
    error = _write_during_rows(mariadb_server, mariadb_db, "extended")
    assert error is not None and error.args[0] == 1205, error


def test_none_lock_takes_no_lock(mariadb_server, mariadb_db):
    """none: no lock at all."""
    assert _write_during_rows(mariadb_server, mariadb_db, "none") is None


def test_percona_backup_lock_is_not_offered_on_mariadb(mariadb_server, mariadb_db):
    """minimal_percona is Percona Server's: the MariaDB connector refuses it, naming the modes it has."""
    with pytest.raises(ConfigError) as info:
        EngineThread(connector_config(mariadb_server, mariadb_db, **{"snapshot.locking.mode": "minimal_percona"}))
    assert "snapshot.locking.mode: 'minimal_percona' is not available for mariadb" in str(info.value)
    assert "minimal, extended, none, custom" in str(info.value)


def test_unknown_custom_lock_is_a_configuration_error(mariadb_server, mariadb_db):
    """A custom name no plugin registered: ConfigError naming the property and the choices."""
    with pytest.raises(ConfigError) as info:
        EngineThread(connector_config(mariadb_server, mariadb_db, **{
            "snapshot.locking.mode": "custom", "snapshot.locking.mode.custom.name": "nope"}))
    assert "snapshot.locking.mode.custom.name: no snapshot lock called 'nope'" in str(info.value)


def test_override_without_its_statement_is_a_configuration_error(mariadb_server, mariadb_db):
    """snapshot.select.statement.overrides naming a table without its statement fails before connecting."""
    with pytest.raises(ConfigError) as info:
        EngineThread(connector_config(mariadb_server, mariadb_db, **{
            "snapshot.select.statement.overrides": f"{mariadb_db}.t"}))
    assert f"snapshot.select.statement.overrides.{mariadb_db}.t is not set" in str(info.value)


def test_configuration_based_snapshot_without_streaming(mariadb_server, mariadb_db):
    """configuration_based: data yes, stream no: the connector ends after the snapshot."""
    _rows(mariadb_server, mariadb_db, "t", 4)
    engine = _run_to_end(connector_config(mariadb_server, mariadb_db, **{
        "snapshot.mode": "configuration_based", "snapshot.mode.configuration.based.snapshot.data": "true",
        "snapshot.mode.configuration.based.start.stream": "false"}))
    assert count_ops(engine.records, "r") == 4


def test_snapshot_include_list_and_table_order(mariadb_server, mariadb_db):
    """snapshot.include.collection.list limits the rows read; snapshot.tables.order.by.row.count orders tables."""
    _rows(mariadb_server, mariadb_db, "small", 2)
    _rows(mariadb_server, mariadb_db, "big", 50)
    _rows(mariadb_server, mariadb_db, "other", 5)
    mariadb_server.execute(f"ANALYZE TABLE `{mariadb_db}`.small, `{mariadb_db}`.big, `{mariadb_db}`.other")
    engine = _run_to_end(connector_config(mariadb_server, mariadb_db, **{
        "snapshot.mode": "initial_only", "snapshot.include.collection.list": f"{mariadb_db}\\.(small|big)",
        "snapshot.tables.order.by.row.count": "descending"}))
    tables = [r.topic.rsplit(".", 1)[-1] for r in engine.records if r.value and r.value.get("op") == "r"]
    assert tables == ["big"] * 50 + ["small"] * 2


@pytest.mark.parametrize(("prop", "matching", "streamed"), [
    ("gtid.source.includes", True, True), ("gtid.source.includes", False, False),
    ("gtid.source.excludes", True, False), ("gtid.source.excludes", False, True),
])
def test_gtid_source_filters(mariadb_server, mariadb_db, prop, matching, streamed):
    """gtid.source.includes/excludes match MariaDB GTID sources (``domain-server``); other sources' rows are skipped."""
    mariadb_server.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=mariadb_db)
    engine = EngineThread(connector_config(mariadb_server, mariadb_db, **{prop: "0-1" if matching else "9-9"})).start()
    try:
        engine.wait(lambda rs: engine.engine.metrics.streaming.connected, "streaming")
        mariadb_server.execute(["INSERT INTO t VALUES (1)", "CREATE TABLE marker (id INT PRIMARY KEY)"],
                               database=mariadb_db)
        # DDL is never filtered by GTID source: its schema change event shows the insert was read past.
        engine.wait(lambda rs: any(r.value and "marker" in str(r.value.get("ddl")) for r in rs), "the marker DDL")
    finally:
        engine.stop()
    assert count_ops(engine.records, "c", "t") == (1 if streamed else 0)
