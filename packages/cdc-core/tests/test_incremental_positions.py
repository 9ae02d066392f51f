"""Position watermarks in the core's incremental snapshot, on an in-memory table whose log positions count transactions.

The source declares ``watermarks = "position"``: windows open and close from the positions log
events and checkpoints report, nothing is written. Under writes the replay equals the table and no
key goes back; on an idle log every window closes at the current checkpoint.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

from cdc_core.config import Config
from cdc_core.events import RawChange
from cdc_core.incremental.coordinator import IncrementalSnapshot
from cdc_core.incremental.spi import POSITION, ChunkRows, watermarks_of
from cdc_core.incremental.state import TableScan
from cdc_core.relational import Column, Table, TableId
from cdc_core.schema import INT32

ITEMS = Table(TableId(None, "public", "items"), [
    Column("id", "int4", INT32, int, position=1, optional=False),
    Column("v", "int4", INT32, int, position=2, optional=False),
], ["id"])


class LogTable:
    """A table and its log: each write is one transaction; position n = the first n transactions."""

    def __init__(self, rows: int, latency: float = 0.0):
        self.latency = latency
        self.rows = {k: 0 for k in range(2, 2 * rows + 1, 2)}
        self.log: list[RawChange] = []
        self.lock = threading.Lock()
        self.next_odd = 1

    def write(self, rnd: random.Random) -> None:
        """One random update, insert or delete, logged."""
        with self.lock:
            p = len(self.log) + 1
            key = rnd.choice(list(self.rows)) if self.rows else None
            op = rnd.random()
            if key is not None and op < 0.6:
                before = (key, self.rows[key])
                self.rows[key] += 1
                change = RawChange(ITEMS, "u", before, (key, self.rows[key]), {"pos": p}, {"pos": p}, p)
            elif key is not None and op < 0.8:
                change = RawChange(ITEMS, "d", (key, self.rows.pop(key)), None, {"pos": p}, {"pos": p}, p)
            else:
                key = self.next_odd = self.next_odd + 2 * rnd.randint(1, 20)
                self.rows[key] = 0
                change = RawChange(ITEMS, "c", None, (key, 0), {"pos": p}, {"pos": p}, p)
            self.log.append(change)


class Reader:
    """Key-ordered chunk reads of the table, and its log position."""

    def __init__(self, table: LogTable):
        self.table = table
        self.latency = table.latency

    def max_key(self, table, key, condition):
        with self.table.lock:
            return [max(self.table.rows)] if self.table.rows else None

    def read_chunk(self, table, key, after, upto, limit, condition) -> ChunkRows:
        with self.table.lock:
            keys = sorted(k for k in self.table.rows if (after is None or k > after[0]) and k <= upto[0])[:limit]
            rows = [RawChange(ITEMS, "r", None, (k, self.table.rows[k]), {"snapshot": "incremental"}, None)
                    for k in keys]
        time.sleep(self.latency)  # the result on its way back: writes go on meanwhile, inside the window
        return ChunkRows(rows, [keys[-1]], [keys[0]]) if keys else ChunkRows()

    def current_position(self) -> int:
        with self.table.lock:
            return len(self.table.log)

    def close(self) -> None:
        pass


class PositionSource:
    """An ad hoc snapshot source with position watermarks (transaction counts)."""

    watermarks = POSITION

    def __init__(self, table: LogTable):
        self.table = table

    def captured_tables(self) -> list[Table]:
        return [ITEMS]

    def reader(self) -> Reader:
        return Reader(self.table)

    def event_position(self, change: RawChange) -> int:
        return change.source["pos"]

    def after(self, watermark: int, position: int) -> bool:
        return position > watermark

    def caught_up(self, watermark: int, offset: dict[str, Any]) -> bool:
        return offset["pos"] >= watermark

    def close(self) -> None:
        pass


class Notes:
    """Collects notifications."""

    def __init__(self):
        self.types: list[str] = []

    def notify(self, aggregate: str, type_: str, data: dict, id_: str | None) -> None:
        self.types.append(type_)


class Log:
    def __getattr__(self, name):
        return lambda *a, **k: None


def _snapshot(table: LogTable, chunk: int) -> tuple[IncrementalSnapshot, Notes]:
    notes = Notes()
    inc = IncrementalSnapshot(PositionSource(table), Config({"incremental.snapshot.chunk.size": chunk}), notes,
                              None, Log())
    inc.add("sig-1", [TableScan(ITEMS, ["id"])])
    return inc, notes


def _replay(events: list[RawChange]) -> tuple[dict[int, int], int]:
    state: dict[int, int | None] = {}
    versions: dict[int, int] = {}
    reads = 0
    for e in events:
        row = e.after if e.after is not None else e.before
        key = row[0]
        if e.op == "d":
            state[key] = None
            continue
        if e.op == "r":
            reads += 1
            assert state.get(key, 0) is not None, f"a READ of {key} came after its delete"
        assert e.after[1] >= versions.get(key, -1), f"key {key} went back from v{versions[key]} to v{e.after[1]}"
        versions[key] = e.after[1]
        state[key] = e.after[1]
    return {k: v for k, v in state.items() if v is not None}, reads


def test_a_source_declares_position_watermarks():
    assert watermarks_of(PositionSource(LogTable(1))) == POSITION


def test_position_windows_under_writes_replay_to_the_table():
    """Writes between and inside windows: the replayed events equal the table, no key goes back."""
    table = LogTable(3000, latency=0.003)
    rnd = random.Random(5)
    inc, notes = _snapshot(table, 50)
    events: list[RawChange] = []
    streamed = 0
    deadline = time.monotonic() + 60
    try:
        while inc.active and time.monotonic() < deadline:
            for _ in range(rnd.randint(0, 8)):
                table.write(rnd)
            with table.lock:
                new = table.log[streamed:]
            for change in new:
                events += inc.advance(change) or ()
                inc.observe(change)
                events.append(change)
                streamed += 1
                if rnd.random() < 0.3:  # a commit checkpoint
                    events += inc.advance_checkpoint({"pos": streamed}) or ()
            time.sleep(0.0005)
    finally:
        inc.close()
    assert not inc.active, "the snapshot did not complete"
    replayed, reads = _replay(events)
    assert replayed == table.rows
    assert reads > 1000
    assert notes.types[0] == "STARTED" and notes.types[-1] == "COMPLETED"


def test_position_windows_close_on_an_idle_log():
    """Nothing is written: every window closes at the one checkpoint the stream is at."""
    table = LogTable(2000)
    for _ in range(10):
        table.write(random.Random(1))
    inc, notes = _snapshot(table, 128)
    offset = {"pos": len(table.log)}
    events: list[RawChange] = []
    try:
        deadline = time.monotonic() + 30
        while inc.active and time.monotonic() < deadline:
            more = inc.advance_checkpoint(offset)
            while more is not None:
                events += more
                more = inc.close_idle(offset)
    finally:
        inc.close()
    assert not inc.active
    assert [e.after[0] for e in events] == sorted(table.rows)
    # One IN_PROGRESS per chunk that read rows, the last one too (Debezium 2.7.4's notifyInProgress).
    assert notes.types.count("IN_PROGRESS") == -(-len(events) // 128)


class StatusNotes(Notes):
    """Collects notifications with their TABLE_SCAN_COMPLETED status."""

    def notify(self, aggregate: str, type_: str, data: dict, id_: str | None) -> None:
        self.types.append(f"{type_}:{data['status']}" if type_ == "TABLE_SCAN_COMPLETED" else type_)


def test_a_table_that_cannot_be_read_is_reported_in_its_turn_also_after_a_restart():
    """A name matching no table waits behind the tables named before it (Debezium 2.7.4's readChunk reports it when
    it comes to it); the offsets keep it, so a restart before its turn still reports it, then completes."""
    nothing = TableScan(Table(TableId(None, None, "public.nothing"), [], []), [], skip="UNKNOWN_SCHEMA")
    notes = StatusNotes()
    inc = IncrementalSnapshot(PositionSource(LogTable(10)), Config({"incremental.snapshot.chunk.size": 4}), notes,
                              None, Log())
    try:
        inc.add("sig-1", [TableScan(ITEMS, ["id"]), nothing])
        assert notes.types == ["STARTED"]  # not reported before items is read
        state = inc.state
    finally:
        inc.close()
    assert [(t["table"], t.get("skip")) for t in state["tables"]] == [("public.items", None),
                                                                      ("public.nothing", "UNKNOWN_SCHEMA")]
    # A restart once items was read whole: only the unreadable name is left, and its turn has come.
    later = StatusNotes()
    again = IncrementalSnapshot(PositionSource(LogTable(10)), Config({}), later, None, Log())
    try:
        again.restore({**state, "tables": state["tables"][1:]})
        assert later.types == ["TABLE_SCAN_COMPLETED:UNKNOWN_SCHEMA", "COMPLETED"] and not again.active
    finally:
        again.close()
