"""Parallel snapshot chunks of tables keyed by a unique index (no primary key)."""

from __future__ import annotations

from cdc_core.config import Config
from cdc_core.events import RawChange
from cdc_core.spi.chunks import snapshot_chunks_for
from cdc_postgres.connector import PostgresConnector


def _read_all(config: Config) -> list[tuple]:
    cls = snapshot_chunks_for(PostgresConnector)
    capability = cls(config, None)
    plan = capability.open(for_streaming=False, tables=None, chunk_rows=100)
    try:
        rows = [c.after for chunk in plan.chunks for batch in cls.read_chunk(config, chunk)
                for c in batch if isinstance(c, RawChange)]
    finally:
        capability.close()
    return rows


def test_a_nullable_unique_key_is_chunked_by_pages_and_no_row_is_lost(pg_server, pg_db):
    """Key ranges never hold a row whose key is NULL: the unique index Debezium keys such a table by
    may be on a nullable column, so its chunks are page ranges."""
    pg_server.execute("CREATE TABLE u (b int UNIQUE, v text); ALTER TABLE u REPLICA IDENTITY FULL;"
                      "INSERT INTO u SELECT CASE WHEN g % 3 = 0 THEN NULL ELSE g END, 'x' FROM generate_series(1, 2000) g;"
                      "ANALYZE u", dbname=pg_db)
    config = Config({"connector.class": "postgres", "database.hostname": pg_server.host, "database.port": pg_server.port,
                     "database.user": pg_server.user, "database.dbname": pg_db, "topic.prefix": "p"})
    rows = _read_all(config)
    assert len(rows) == 2000
    assert sum(1 for r in rows if r[0] is None) == 666
