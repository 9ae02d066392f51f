"""The chunked snapshot's handoff filter and the binlog log position, on hand-made offsets (no server)."""

from __future__ import annotations

from types import SimpleNamespace

from cdc_core.events import Checkpoint, RawChange
from cdc_core.relational import TableId
from cdc_core.spi.chunks import Chunk, SnapshotPlan
from cdc_mysql.handoff import BinlogHandoffFilter, handoff_state
from cdc_mysql.position import MySqlLogPosition

F = "mariadb-bin.000003"
TABLE = SimpleNamespace(id=TableId("db", None, "t"), columns=[SimpleNamespace(name="v"), SimpleNamespace(name="id")])
OTHER = SimpleNamespace(id=TableId("db", None, "other"), columns=[SimpleNamespace(name="id")])
RESUME = {"file": F, "pos": 100, "gtids": "0-1-10"}


def _plan() -> SnapshotPlan:
    bounds = [(None, 100), (100, 200), (200, None)]
    chunks = [Chunk("db.t", i, "s", {"kind": "keys", "column": "id", "from": lo, "to": hi}, extra={"resume": RESUME})
              for i, (lo, hi) in enumerate(bounds)]
    chunks.append(Chunk("db.other", 0, "s", {"kind": "all", "select": "..."}, extra={"resume": RESUME}))
    return SnapshotPlan("s", chunks, RESUME, reports_reads=True)


def _change(op, before, after, pos, table=TABLE, file=F):
    return RawChange(table, op, before, after, {}, {"file": file, "pos": pos, "event": 0, "row": 1})


def test_state_keeps_the_earliest_read_and_leaves_out_tables_read_at_the_start():
    reports = {("db.t", 0): [{"file": F, "pos": 500}, {"file": F, "pos": 300}], ("db.t", 2): [{"file": F, "pos": 400}],
               ("db.other", 0): [{"file": F, "pos": 100}]}
    state = handoff_state(_plan(), reports)
    assert state == {"until": {"file": F, "pos": 400}, "tables": {"db.t": {"column": "id", "chunks": [
        [None, 100, F, 300], [100, 200, F, 100], [200, None, F, 400]]}}}
    assert handoff_state(_plan(), {}) is None  # unreported chunks count as read at the start: nothing to drop


def test_changes_before_their_chunks_read_are_dropped_and_key_moves_keep_the_missing_half():
    state = {"until": {"file": F, "pos": 400}, "tables": {"db.t": {"column": "id", "chunks": [
        [None, 100, F, 300], [100, 200, F, 100], [200, None, F, 400]]}}}
    f = BinlogHandoffFilter(state)
    batch = [
        _change("u", ("a", 5), ("b", 5), 200),        # chunk 0 read at 300: in its rows
        _change("u", ("a", 150), ("b", 150), 200),    # chunk 1 read at the start: needed
        _change("c", None, ("x", 250), 350),          # chunk 2 read at 400: in its rows
        _change("u", ("a", 5), ("a", 150), 250),      # 5 -> 150: the delete is in chunk 0, the insert is not
        _change("u", ("a", 150), ("a", 5), 260),      # 150 -> 5: the insert is in chunk 0, the delete is not
        _change("d", ("a", 7), None, 310),            # after chunk 0's read
        _change("c", None, (1,), 120, OTHER),         # another table: untouched
        Checkpoint({"file": F, "pos": 330, "event": 0, "row": 0}),
    ]
    out = f.filter(batch)
    assert [(c.op, c.before, c.after) for c in out if isinstance(c, RawChange)] == [
        ("u", ("a", 150), ("b", 150)), ("c", None, ("a", 150)), ("d", ("a", 150), None), ("d", ("a", 7), None),
        ("c", None, (1,))]
    assert f.state() == state and f.version == 0
    out = f.filter([_change("c", None, ("y", 260), 410), _change("c", None, ("z", 270), 390)])
    assert [c.after for c in out] == [("y", 260), ("z", 270)]  # past every read: the handoff is over
    assert f.state() is None and f.version == 1


def test_a_truncate_between_the_reads_is_kept_and_lowers_the_positions():
    state = {"until": {"file": F, "pos": 400}, "tables": {"db.t": {"column": "id", "chunks": [
        [None, 100, F, 300], [100, None, F, 100]]}}}
    f = BinlogHandoffFilter(state)
    assert f.filter([_change("c", None, ("a", 1), 150)]) == []
    truncate = _change("t", None, None, 200)
    assert f.filter([truncate]) == [truncate] and f.version == 1
    assert f.state()["tables"]["db.t"]["chunks"][0] == [None, 100, F, 200]
    kept = _change("c", None, ("a", 1), 250)
    assert f.filter([kept]) == [kept]  # the target was emptied: rows since the truncate come from the binlog
    g = BinlogHandoffFilter({"until": {"file": F, "pos": 400}, "tables": {"db.t": {"column": "id", "chunks": [
        [None, None, F, 300]]}}})
    assert g.filter([_change("t", None, None, 200)]) == [] and g.version == 0


def test_log_position_reached_by_gtids_and_by_file_position():
    lp = MySqlLogPosition(None)  # type: ignore[arg-type]
    target = {"file": F, "pos": 1000, "gtids": "0-1-10"}
    assert not lp.reached({"file": F, "pos": 900, "event": 1, "row": 1, "gtids": "0-1-9"}, target)  # tx 10's change
    assert lp.reached({"file": F, "pos": 1000, "event": 0, "row": 0, "gtids": "0-1-10"}, target)  # its commit
    assert lp.reached({"file": F, "pos": 1000, "event": 0, "row": 1, "gtids": "0-1-10"}, target)  # tx 11's change
    assert not lp.reached({"file": F, "pos": 1200, "snapshot": True, "gtids": "0-1-10"}, target)
    plain = {"file": F, "pos": 1000, "gtids": None}
    assert not lp.reached({"file": F, "pos": 999, "gtids": None}, plain)
    assert lp.reached({"file": F, "pos": 1000, "gtids": None}, plain)
    assert lp.reached({"file": "mariadb-bin.000004", "pos": 4, "gtids": None}, plain)
    uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    mysql = {"file": "mysql-bin.000001", "pos": 5, "gtids": f"{uuid}:1-20"}
    assert lp.reached({"file": "mysql-bin.000001", "pos": 1, "gtids": f"{uuid}:1-20,other:1-3"}, mysql)
    assert not lp.reached({"file": "mysql-bin.000001", "pos": 9, "gtids": f"{uuid}:1-19"}, mysql)
