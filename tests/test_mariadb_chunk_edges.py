"""MariaDB chunk readers and their binlog positions when the server shows them another session's.

MariaDB fills ``SHOW STATUS LIKE 'binlog_snapshot_%'`` into process-wide variables from the
calling session's snapshot, without holding a lock until they are copied into the result: when
two sessions run it at the same moment, one can read the other's position. A chunk reported later
than its rows then loses the changes in between (the handoff filter drops them as read already);
that is how ``test_mariadb_chunks`` lost rows under load. Here the race is made deterministic: the
reader's connection gets, for chosen readings, the result of the same statement run by another
session holding an older snapshot on the same real server.
"""

from __future__ import annotations

from typing import Any

import pymysql
import pytest

from cdc_core.config import Config
from cdc_core.errors import ConnectorError
from cdc_core.spi.chunks import ChunkRead, snapshot_chunks_for
from cdc_core.spi.position import log_position_for
from cdc_mariadb.connector import MariaDbConnector
from cdc_mysql import chunks as mysql_chunks
from cdc_mysql import snapshot_position
from mariadb_cdc import connector_config

STATUS = "SHOW STATUS LIKE 'binlog_snapshot_%'"


def _setup(server, db: str) -> tuple[Config, Any, Any]:
    server.execute(["CREATE TABLE counters (id int PRIMARY KEY, n int NOT NULL)",
                    "INSERT INTO counters SELECT seq, 0 FROM seq_1_to_100"], database=db)
    config = Config({**connector_config(server, db), "snapshot.fetch.size": "50"})
    cls = snapshot_chunks_for(MariaDbConnector)
    capability = cls(config, None)
    plan = capability.open(for_streaming=False, tables=[f"{db}.counters"], chunk_rows=1000)
    capability.close()
    assert plan.chunks[0].extra["method"] == mysql_chunks.SNAPSHOT_STATUS
    return config, cls, plan.chunks[0]


def _racy(monkeypatch, other: pymysql.connections.Connection, clobbered: Any) -> list[Any]:
    """Reader connections whose ``binlog_snapshot_*`` readings number ``clobbered(i)`` show ``other``'s result.

    Returns a list that gets, for every reading, who held the position lock then (its connection id or None).
    """
    seen: list[Any] = []
    readings = [0]

    class RacyCursor(pymysql.cursors.Cursor):
        def execute(self, query, args=None):
            result = super().execute(query, args)
            if query == STATUS:
                with other.cursor() as cur:
                    cur.execute("SELECT IS_USED_LOCK(%s)", (snapshot_position.POSITION_LOCK,))
                    seen.append(cur.fetchone()[0])
                    if clobbered(readings[0]):
                        cur.execute(STATUS)
                        self._rows = cur.fetchall()  # what the server's race hands this session
                readings[0] += 1
            return result

    connect = mysql_chunks.connect

    def racy_connect(config: Config) -> Any:
        conn = connect(config)
        conn.cursorclass = RacyCursor
        return conn

    monkeypatch.setattr(mysql_chunks, "connect", racy_connect)
    return seen


def _older_snapshot(server, db: str) -> pymysql.connections.Connection:
    other = server.connect(db)
    with other.cursor() as cur:
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
    return other


def test_a_reading_showing_another_sessions_position_is_not_reported(mariadb_server, mariadb_db, monkeypatch):
    server, db = mariadb_server, mariadb_db
    config, cls, chunk = _setup(server, db)
    other = _older_snapshot(server, db)
    try:
        server.execute("UPDATE counters SET n = 1 WHERE id = 5", database=db)  # after the other's snapshot
        now = log_position_for(MariaDbConnector)(config).current_position()
        seen = _racy(monkeypatch, other, lambda i: i == 0)
        batches = list(cls.read_chunk(config, chunk))
    finally:
        other.close()
    # The reader's rows have the update: its position is now's, not the other session's older one
    # (reported, the handoff would apply the update again over rows that have it).
    assert batches[0] == [ChunkRead(f"{db}.counters", 0, {"file": now["file"], "pos": now["pos"]})]
    rows = {c.after[0]: c.after[1] for b in batches[1:] for c in b}
    assert len(rows) == 100 and rows[5] == 1
    # Every reading was taken under the position lock (by the reader, not by the observing session).
    assert len(seen) >= 2 and all(s is not None for s in seen)


def test_readings_that_never_agree_fail_the_read_instead_of_guessing(mariadb_server, mariadb_db, monkeypatch):
    server, db = mariadb_server, mariadb_db
    config, cls, chunk = _setup(server, db)
    other = _older_snapshot(server, db)
    try:
        server.execute("UPDATE counters SET n = 1 WHERE id = 5", database=db)
        _racy(monkeypatch, other, lambda i: i % snapshot_position.POSITION_READINGS == 0)  # one per attempt
        with pytest.raises(ConnectorError, match="binlog_snapshot_position"):
            list(cls.read_chunk(config, chunk))
        monkeypatch.undo()
        # The lock was released with the failure: a later reader takes it and reads.
        batches = list(cls.read_chunk(config, chunk))
    finally:
        other.close()
    assert isinstance(batches[0][0], ChunkRead)
    assert server.execute(f"SELECT IS_USED_LOCK('{snapshot_position.POSITION_LOCK}')")[0][0] is None
