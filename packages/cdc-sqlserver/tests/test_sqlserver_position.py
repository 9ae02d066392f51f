"""Where Spark's Trigger.AvailableNow stops on SQL Server, and what the chunked snapshot's handoff drops (no server)."""

from __future__ import annotations

from cdc_core.config import Config
from cdc_core.events import RawChange
from cdc_core.relational import Column, Table, TableId
from cdc_core.schema import INT32
from cdc_sqlserver.chunks import LsnHandoffFilter
from cdc_sqlserver.position import SqlServerLogPosition

T = "0000002a:00000100:0003"  # the max LSN when the query started
BEFORE, AFTER = "0000002a:000000f0:0001", "0000002a:00000200:0001"


def _offset(commit, **extra):
    return {"commit_lsn": commit, "change_lsn": commit, "event_serial_no": 1, **extra}


def test_available_now_stops_after_the_start_max_lsn_transaction_or_at_an_idle_poll_past_it():
    position = SqlServerLogPosition(Config({"database.names": "testDB"}))
    target = {"lsn": T}
    assert not position.reached(_offset(BEFORE), target)
    assert not position.reached(_offset(T), target)  # a change of the position's own transaction: still needed
    assert position.reached(_offset(AFTER), target)
    assert position.reached(_offset(T, caught_up_lsn=T), target)  # an idle poll read everything up to it
    assert not position.reached(_offset(BEFORE, caught_up_lsn=BEFORE), target)
    assert not position.reached({"snapshot": True, "snapshot_completed": False, "commit_lsn": AFTER}, target)
    assert position.reached({"snapshot": True, "snapshot_completed": True, "commit_lsn": BEFORE,
                             "caught_up_lsn": T}, target)
    assert position.reached(_offset(BEFORE), {"lsn": "NULL"})  # nothing captured at the start


def test_handoff_drops_changes_a_chunk_read_contains_until_the_stream_passes_every_read():
    table = Table(TableId("testDB", "dbo", "items"), [Column("id", "INT", INT32, int), Column("v", "INT", INT32, int)],
                  ["id"])
    state = {"until": AFTER, "tables": {"dbo.items": {"column": "id", "chunks": [[None, 100, BEFORE], [100, None, AFTER]]}}}
    handoff = LsnHandoffFilter(state)

    def change(commit, key, op="u", before_key=None):
        before = None if op == "c" else [before_key if before_key is not None else key, 0]
        return RawChange(table, op, before, [key, 1], {}, _offset(commit))

    kept = handoff.filter([change(BEFORE, 5), change(T, 5), change(T, 150), change(T, 150, "u", before_key=5)])
    # key 5's chunk was read at BEFORE: the change at BEFORE is in its rows, the one at T is not;
    # key 150's chunk was read at AFTER: T's change is in its rows; a move 5 -> 150 keeps the delete of 5.
    assert [(c.op, c.after[0] if c.after else c.before[0]) for c in kept] == [("u", 5), ("d", 5)]
    assert handoff.state() is not None
    assert handoff.filter([change("0000002a:00000300:0001", 150)])[0].after == [150, 1]
    assert handoff.state() is None  # past every read: the handoff is over


def test_the_log_end_a_chunk_reports_reads_both_lsn_forms_and_names_the_permission_when_missing():
    import pytest

    from cdc_core.errors import ConnectorError
    from cdc_sqlserver.log_end import log_end

    class Conn:
        def __init__(self, value):
            self.value = value

        def execute(self, statement):
            assert "sys.dm_db_log_stats(DB_ID())" in statement
            return self

        def fetchone(self):
            return (self.value,)

    assert log_end(Conn("0000002a:000001c8:0003")) == "0000002a:000001c8:0003"
    assert log_end(Conn(str(42 * 10**15 + 456 * 10**5 + 3))) == "0000002a:000001c8:0003"
    with pytest.raises(ConnectorError, match="VIEW DATABASE STATE"):
        log_end(Conn(None))
