"""YB-27: ``slot.lsn.type`` at slot creation, and HYBRID_TIME positions acknowledged only at a commit.

A PostgreSQL stand-in has WAL LSNs only, so the YugabyteDB slot command is checked as the command
a YugabyteDB server is sent (through the connector's own slot creation, on a recording connection),
and the acknowledgement rule on the connector itself.
"""

from __future__ import annotations

import logging

import pytest

from cdc_core.config import Config
from cdc_core.logs import connector_logger
from cdc_core.spi.connector import ConnectorContext
from cdc_yugabyte.connector import YugabyteDBConnector, create_slot_command


def _connector(**extra) -> YugabyteDBConnector:
    """A connector, not started."""
    config = Config({"database.hostname": "h1:5433,h2:5433", "database.dbname": "yugabyte", "topic.prefix": "p",
                     **extra})
    return YugabyteDBConnector(config, ConnectorContext(log=connector_logger("cdc", "yugabytedb", "p")))


class _Result:
    """CREATE_REPLICATION_SLOT's answer row."""

    nfields = 4

    def get_value(self, row: int, col: int) -> bytes:
        return [b"debezium", b"0/2A", None, b"yboutput"][col]


class _RecordingReplication:
    """A replication connection that records the commands it is sent."""

    def __init__(self) -> None:
        self.commands: list[str] = []

    def _command(self, command: str, ok) -> _Result:
        self.commands.append(command)
        return _Result()


@pytest.mark.parametrize("lsn_type", ["SEQUENCE", "HYBRID_TIME"])
def test_slot_is_created_with_its_lsn_type_on_yugabytedb(lsn_type):
    """The replication command carries the LSN type; the slot's consistent point is read back."""
    connector = _connector(**{"slot.lsn.type": lsn_type})
    connector.is_yugabyte = True
    connector._repl = _RecordingReplication()
    created = connector._create_slot(export_snapshot=False)
    kind = "" if lsn_type == "SEQUENCE" else " HYBRID_TIME"  # SEQUENCE: the server's default, also on 2024.1
    assert connector._repl.commands == [f'CREATE_REPLICATION_SLOT "debezium" LOGICAL "yboutput" NOEXPORT_SNAPSHOT{kind}']
    assert created.consistent_point == 0x2A and created.output_plugin == "yboutput"


def test_default_lsn_type_is_sequence():
    assert create_slot_command("s", "pgoutput", True, _connector().lsn_type) == \
        'CREATE_REPLICATION_SLOT "s" LOGICAL "pgoutput" EXPORT_SNAPSHOT'


def test_bad_lsn_type_is_refused():
    from cdc_core.engine import connector_problems

    problems = connector_problems(Config({"connector.class": "yugabytedb", "database.dbname": "y", "topic.prefix": "p",
                                          "slot.lsn.type": "WAL"}))
    assert problems == ["slot.lsn.type: 'WAL' is not one of: sequence, hybrid_time"]


def test_hybrid_time_is_acknowledged_only_after_the_commit():
    """Every record of a transaction carries its commit's hybrid time: confirming one mid-transaction would
    tell YugabyteDB the whole transaction is done."""
    hybrid, sequence = _connector(**{"slot.lsn.type": "HYBRID_TIME"}), _connector()
    mid = {"lsn": 7000, "lsn_proc": 7000, "lsn_commit": 7000, "txId": 5}
    end = {"lsn": 7000, "lsn_proc": None, "lsn_commit": 7000, "txId": 5}
    hybrid.acknowledge(mid)
    sequence.acknowledge(mid)
    assert hybrid._ack_lsn == 0 and sequence._ack_lsn == 7000
    hybrid.acknowledge(end)
    assert hybrid._ack_lsn == 7000


def test_lsn_type_on_a_postgresql_stand_in_is_only_logged(pg_server, pg_db, caplog):
    """On PostgreSQL the slot is an ordinary one (WAL LSNs); the connector says so and streams."""
    from yb_run import Running, yb_config

    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname=pg_db)
    caplog.set_level(logging.WARNING)
    run = Running(yb_config(pg_server.host, pg_server.port, pg_server.user, pg_db,
                            **{"plugin.name": "pgoutput", "slot.lsn.type": "HYBRID_TIME"}))
    try:
        run.wait_streaming()
        pg_server.execute("BEGIN; INSERT INTO t VALUES (1); INSERT INTO t VALUES (2); COMMIT", dbname=pg_db)
        run.wait_data("dbserver.public.t", 2)
    finally:
        run.stop()
    assert "slot.lsn.type=HYBRID_TIME is YugabyteDB's" in caplog.text
