"""The handoff from a chunked snapshot to the binlog: drop the changes a chunk's own read already contains.

Chunk i was read at binlog position p_i >= p0 (``cdc_mysql.chunks``); the stream starts at p0. A
change belongs to the transaction starting at its offset's ``file``/``pos``; it is in chunk i's
rows exactly when that start is before p_i and its key is in chunk i's range. Such changes are
dropped; an update that moves a row from one chunk's range to another's keeps the half that is
not yet in the rows (the delete of the old key, or the insert of the new one).

A TRUNCATE before every read position of its table is in every chunk: dropped. One between them
is kept (the target table is emptied) and the table's positions are lowered to it, so the rows
since then are replayed from the binlog rather than trusted from the reads; the state changes, and
``version`` says so.

The state: ``{"until": position, "tables": {"db.table": {"column": name|None, "chunks": [[from,
to, file, pos], ...]}}}`` with every chunk of each table read after p0 (``from``/``to`` None: open).
"""

from __future__ import annotations

import bisect
import copy
from collections.abc import Mapping, Sequence
from typing import Any

from cdc_core.events import RawChange
from cdc_core.spi.chunks import SnapshotPlan

from cdc_mysql.position import binlog_key


def _key(position: Mapping[str, Any]) -> tuple[int, int]:
    number, _, pos = binlog_key(position["file"], position["pos"])
    return (number, pos)


def handoff_state(plan: SnapshotPlan, reports: Mapping[tuple[str, int], list[dict[str, Any]]]) -> dict[str, Any] | None:
    """The state for ``plan``'s chunks (each at its earliest reported read; unreported: at p0), None if all read at p0.

    The earliest read is the safe choice when a chunk was read more than once (a Spark task retried
    or a batch's DataFrame used twice): changes before it are in every read of the chunk; a later
    read's newer rows are then only updated again by changes they already contain.
    """
    if not plan.chunks:
        return None
    resume = plan.chunks[0].extra["resume"]
    at: dict[tuple[str, int], dict[str, Any]] = {}
    for chunk in plan.chunks:
        got = reports.get((chunk.table, chunk.index)) or []
        earliest = min(got, key=_key, default=None)
        at[(chunk.table, chunk.index)] = earliest if earliest is not None and _key(earliest) > _key(resume) else resume
    later = {t for (t, _), p in at.items() if p is not resume}
    if not later:
        return None
    tables: dict[str, Any] = {}
    for chunk in plan.chunks:
        if chunk.table not in later:
            continue
        p = at[(chunk.table, chunk.index)]
        entry = tables.setdefault(chunk.table, {"column": chunk.bounds.get("column"), "chunks": []})
        entry["chunks"].append([chunk.bounds.get("from"), chunk.bounds.get("to"), p["file"], int(p["pos"])])
    until = max((at[k] for k in at), key=_key)
    return {"until": {"file": until["file"], "pos": int(until["pos"])}, "tables": tables}


class _TableRanges:
    """One table's chunks: sorted lower bounds, upper bounds, read positions."""

    def __init__(self, column: str | None, chunks: list[list[Any]]):
        self.column = column
        rows = sorted(chunks, key=lambda c: (c[0] is not None, c[0] if c[0] is not None else 0))
        self.lows = [float("-inf") if c[0] is None else c[0] for c in rows]
        self.highs = [c[1] for c in rows]
        self.positions = [(binlog_key(c[2], c[3])[0], int(c[3])) for c in rows]
        self.index: dict[int, int] = {}  # id(Table) -> column index

    def position_of(self, value: Any) -> tuple[int, int] | None:
        """The read position of the chunk whose range holds ``value`` (None if no chunk does)."""
        if self.column is None:
            return self.positions[0]
        if not isinstance(value, int):
            return None
        i = bisect.bisect_right(self.lows, value) - 1
        if i < 0:
            return None
        hi = self.highs[i]
        return self.positions[i] if hi is None or value < hi else None


class BinlogHandoffFilter:
    """The HandoffFilter of the MySQL/MariaDB chunked snapshot (see the module docstring)."""

    def __init__(self, state: dict[str, Any]):
        self._state = copy.deepcopy(state)
        self.version = 0
        self._until = _key(state["until"])
        self._tables = {name: _TableRanges(t["column"], t["chunks"]) for name, t in state["tables"].items()}
        self._passed = False

    def state(self) -> dict[str, Any] | None:
        """The state after what was filtered so far; None once the stream passed every read position."""
        return None if self._passed else copy.deepcopy(self._state)

    def filter(self, batch: Sequence[Any]) -> list[Any]:
        """The batch without the changes the chunk reads contain."""
        if self._passed:
            return list(batch)
        out: list[Any] = []
        for item in batch:
            if self._passed:
                out.append(item)
                continue
            offset = getattr(item, "offset", None)
            at = _key(offset) if offset and not offset.get("snapshot") and offset.get("file") is not None else None
            if at is not None and at >= self._until:
                self._passed = True
                self.version += 1
                out.append(item)
                continue
            if item.__class__ is RawChange and at is not None:
                kept = self._change(item, at)
                if kept is not None:
                    out.append(kept)
            else:
                out.append(item)
        return out

    def _change(self, change: RawChange, at: tuple[int, int]) -> RawChange | None:
        ranges = self._tables.get(change.table.id.identifier)
        if ranges is None:
            return change
        if change.op == "t":
            return self._truncate(change, at, ranges)
        if ranges.column is None:
            return None if at < ranges.positions[0] else change
        index = ranges.index.get(id(change.table))
        if index is None:
            names = [c.name for c in change.table.columns]
            index = ranges.index[id(change.table)] = names.index(ranges.column)
        before = None if change.before is None else ranges.position_of(change.before[index])
        after = None if change.after is None else ranges.position_of(change.after[index])
        drop_before = before is not None and at < before
        drop_after = after is not None and at < after
        if change.op != "u" or change.before is None or change.after is None or \
                change.before[index] == change.after[index]:
            return None if (drop_after if change.after is not None else drop_before) else change
        if drop_before and drop_after:
            return None
        if drop_before:
            return change._replace(op="c", before=None)  # the old key's removal is in its chunk already
        if drop_after:
            return change._replace(op="d", after=None)  # the new key's row is in its chunk already
        return change

    def _truncate(self, change: RawChange, at: tuple[int, int], ranges: _TableRanges) -> RawChange | None:
        if all(at < p for p in ranges.positions):
            return None
        if any(at < p for p in ranges.positions):
            ranges.positions = [min(p, at) for p in ranges.positions]
            file = change.offset["file"]
            for chunk in self._state["tables"][change.table.id.identifier]["chunks"]:
                if at < (binlog_key(chunk[2], chunk[3])[0], int(chunk[3])):
                    chunk[2], chunk[3] = file, int(change.offset["pos"])
            self.version += 1
        return change
