"""Spark's chunked snapshot for YugabyteDB: PostgreSQL's chunks capability with YugabyteDB's names and cells.

On the PostgreSQL stand-in (its exported snapshot; YugabyteDB's own snapshot options are not implemented).
"""

from __future__ import annotations

from cdc_core.config import Config
from cdc_core.envelope import EventBuilder
from cdc_core.events import ChangeRecord, RawChange
from cdc_core.spi.chunks import snapshot_chunks_for
from cdc_yugabyte.connector import YugabyteDBConnector
from cdc_yugabyte.source import SOURCE_SCHEMA

from yb_run import as_json, yb_config


def _read_all(config: Config, for_streaming: bool) -> tuple[list[RawChange], object]:
    """Plan and read every chunk; the READs and the plan."""
    cls = snapshot_chunks_for(YugabyteDBConnector)
    capability = cls(config, None)
    plan = capability.open(for_streaming=for_streaming, tables=None, chunk_rows=100)
    try:
        return [c for chunk in plan.chunks for batch in cls.read_chunk(config, chunk) for c in batch
                if isinstance(c, RawChange)], plan
    finally:
        capability.close()


def test_chunks_carry_cells_and_yugabytedb_names(pg_server, pg_db):
    """yboutput: each READ's row is cells and its source says YugabyteDB; the plan's tables are cells too."""
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t SELECT g, 'x' || g "
                      "FROM generate_series(1, 500) g; ANALYZE t", dbname=pg_db)
    config = Config(yb_config(pg_server.host, pg_server.port, pg_server.user, pg_db))
    changes, plan = _read_all(config, for_streaming=False)
    assert len(changes) == 500
    assert plan.tables[0].columns[1].schema.type == "struct"
    records = EventBuilder(config, SOURCE_SCHEMA, {"server": "dbserver"}).build(changes[:1])
    [event] = as_json([r for r in records if isinstance(r, ChangeRecord)])
    assert event["value"]["payload"]["after"] == {"id": {"value": 1, "set": True}, "v": {"value": "x1", "set": True}}
    assert event["value"]["payload"]["source"]["connector"] == "YugabyteDB"


def test_streaming_plan_starts_the_yugabytedb_connector(pg_server, pg_db):
    """For streaming, the YugabyteDB connector's own start runs first: a keyless table is refused by name."""
    import pytest

    from cdc_core.errors import ConnectorError

    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY); CREATE TABLE audit_log (msg text)", dbname=pg_db)
    config = Config(yb_config(pg_server.host, pg_server.port, pg_server.user, pg_db, **{"plugin.name": "pgoutput"}))
    with pytest.raises(ConnectorError, match="public.audit_log has none"):
        _read_all(config, for_streaming=True)
    pg_server.execute("DROP TABLE audit_log; INSERT INTO t SELECT generate_series(1, 10)", dbname=pg_db)
    changes, plan = _read_all(config, for_streaming=True)
    assert [c.after[0] for c in changes] == [str(i) for i in range(1, 11)] and plan.resume_offset["lsn"] > 0


def test_log_position_uses_yugabytedb_defaults(pg_server, pg_db):
    """Trigger.AvailableNow's position: the YugabyteDB connector's own capability (its config mapped for PostgreSQL)."""
    from cdc_core.spi.position import log_position_for
    from cdc_yugabyte.position import YugabyteLogPosition

    cls = log_position_for(YugabyteDBConnector)
    assert cls is YugabyteLogPosition
    position = cls(Config(yb_config(pg_server.host, pg_server.port, pg_server.user, pg_db))).current_position()
    assert position["lsn"] > 0
