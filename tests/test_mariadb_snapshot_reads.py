"""How the MariaDB snapshot reads tables: min.row.count.to.stream.results, snapshot.fetch.size, database.query.timeout.ms."""

from __future__ import annotations

import time

import pytest

from cdc_core.relational import Table, TableId
from cdc_mysql.catalog import Catalog
from cdc_mysql.connection import Connection
from cdc_mysql.ddl import SchemaModel
from cdc_mysql.model import TableId as MyTableId
from cdc_mysql.snapshot import ENCODERS_ONLY, SnapshotReader

from mariadb_cdc import EngineThread, connector_config, count_ops

ROWS = 40_000  # of 500 bytes: 20 MB, more than the sockets' buffers hold


def _big_table(server, db) -> None:
    server.execute(["CREATE TABLE big (id INT PRIMARY KEY, v VARCHAR(500))",
                    f"INSERT INTO big SELECT seq, REPEAT('x', 500) FROM seq_1_to_{ROWS}",
                    "ANALYZE TABLE big"], db)


def _select_running(server, db) -> bool:
    """True if the server is still executing (sending) a snapshot SELECT of ``big``."""
    rows = server.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() "
                          f"AND INFO LIKE 'SELECT %%FROM `{db}`.`big`%%'")
    return rows[0][0] > 0


@pytest.mark.parametrize("min_rows, streamed", [(1000, True), (0, True), (10_000_000, False)])
def test_min_row_count_to_stream_results(mariadb_server, mariadb_db, min_rows, streamed):
    """Above the threshold the SELECT is still being sent while the first rows are handed on (streamed);
    below it the whole result was read into memory first, so the server is already done with it."""
    _big_table(mariadb_server, mariadb_db)
    engine = EngineThread(connector_config(mariadb_server, mariadb_db, **{
        "min.row.count.to.stream.results": min_rows, "max.queue.size": 100, "max.batch.size": 50,
        "snapshot.fetch.size": 100}))
    engine.slow = 0.05  # the consumer lags: a streamed result waits in the server's send buffer
    engine.start()
    try:
        engine.wait(lambda rs: count_ops(rs, "r") >= 1, "the first snapshot rows", timeout=60)
        running = _select_running(mariadb_server, mariadb_db)
    finally:
        engine.stop()
    assert running is streamed


def test_snapshot_fetch_size_sets_the_batches(mariadb_server, mariadb_db):
    """The snapshot reader hands rows on in batches of snapshot.fetch.size (streamed or buffered)."""
    mariadb_server.execute(["CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t SELECT seq FROM seq_1_to_95"],
                           mariadb_db)
    conn = Connection(**mariadb_server.conninfo(), conv=ENCODERS_ONLY)
    try:
        model = SchemaModel()
        Catalog(conn).read_table(model, MyTableId(mariadb_db, "t"))
        definition = model.tables[MyTableId(mariadb_db, "t")]
        table = Table(TableId(mariadb_db, None, "t"), [], ["id"])
        sizes = {}
        for fetch_size, min_rows in ((20, 0), (20, 1000), (50, 0)):
            reader = SnapshotReader(conn, "mariadb", "s", 1, {"file": "f", "pos": 4}, fetch_size, _Log(), min_rows,
                                    {f"{mariadb_db}.t": 95})
            batches = list(reader.read([(table, definition, f"SELECT id FROM `{mariadb_db}`.`t`")]))
            sizes[fetch_size, min_rows] = [len(b) for b in batches]
    finally:
        conn.close()
    assert sizes[20, 0] == sizes[20, 1000] == [18, 20, 20, 20, 17]  # streamed and buffered alike
    assert sizes[50, 0] == [48, 47]


class _Log:
    def info(self, *args):
        pass


def test_query_timeout_ends_a_slow_snapshot_query(mariadb_server, mariadb_db):
    mariadb_server.execute(["CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)"], mariadb_db)
    slow = {"snapshot.select.statement.overrides": f"{mariadb_db}.t",
            f"snapshot.select.statement.overrides.{mariadb_db}.t": f"SELECT id FROM `{mariadb_db}`.`t` WHERE SLEEP(3) = 0"}
    engine = EngineThread(connector_config(mariadb_server, mariadb_db, **slow, **{
        "database.query.timeout.ms": 500, "errors.max.retries": 0})).start()
    started = time.monotonic()
    error = engine.join()
    assert error is not None and "database.query.timeout.ms=500" in str(error), error
    assert time.monotonic() - started < 30

    # 0: no limit, the slow query completes.
    engine = EngineThread(connector_config(mariadb_server, mariadb_db, **slow, **{
        "database.query.timeout.ms": 0, "errors.max.retries": 0})).start()
    try:
        engine.wait(lambda rs: count_ops(rs, "r") == 1, "the row of the slow query")
    finally:
        engine.stop()
    assert engine.error is None
