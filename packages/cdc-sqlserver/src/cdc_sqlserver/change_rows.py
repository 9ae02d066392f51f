"""Change-table rows to RawChanges, a fetch at a time: positions, event_serial_no, source blocks and offsets.

A row is ``(__$start_lsn, __$seqval, __$operation, <captured columns>)``, with its Table as one more
item when several capture instances are merged. Fetches of inserts, deletes and updates whose before
image (op 3) is followed by its after image (op 4) in the same fetch (the common case) are converted a
transaction at a time: LSN texts by ``map``, source blocks and offsets by comprehensions, RawChanges by
``tuple.__new__``; a fetch ending inside an update, or rows to skip after a restart, go row by row.
"""

from __future__ import annotations

from functools import partial
from itertools import groupby, repeat
from operator import itemgetter
from typing import Any

from cdc_core.errors import ConnectorError
from cdc_core.events import RawChange
from cdc_core.relational import Table
from cdc_sqlserver.source import CONNECTOR, DEBEZIUM_VERSION

_new_change = partial(tuple.__new__, RawChange)
_OP = itemgetter(2)
#: ``__$operation`` of the changes that are one row each: delete (1) and insert (2).
_ONE_ROW_OPS = frozenset({1, 2})
#: And with an update's before (3) and after (4) images.
_ALL_OPS = frozenset({1, 2, 3, 4})


def lsn_text(raw: bytes) -> str:
    """An LSN's text form from its 10 bytes (``NULL`` for b"")."""
    return raw.hex(":", -4) if raw else "NULL"  # 4:4:2 bytes, grouped from the left


class ChangeRows:
    """One window's change rows as events, carrying the position from one fetch to the next.

    ``commit``/``change`` are the raw LSNs of the last event (b"" for NULL), ``serial`` its
    event_serial_no, ``ts_us`` its commit time; ``skipping``: rows up to the resume position
    (``start``, ``start_serial`` events there) were delivered before and are dropped.
    """

    def __init__(self, server: str, db: str, times: dict[bytes, int], only: Table | None, position: tuple[bytes, bytes],
                 texts: tuple[str, str], serial: int, ts_us: int, skipping: bool, start: tuple[bytes, bytes],
                 start_serial: int):
        """Set up from the reader's position; ``only``: the single stream's table (None: rows carry their table)."""
        self.server, self.db, self.times, self.only = server, db, times, only
        self.commit, self.change = position
        self.commit_text, self.change_text = texts
        self.serial, self.ts_us = serial, ts_us
        self.skipping, self.start, self.start_serial = skipping, start, start_serial
        self.seen_at_start = 1
        #: An update's before image (op 3) whose after image (op 4) is in the next fetch.
        self.pending: tuple[Any, ...] | None = None
        self.emitted = False
        self._data = itemgetter(slice(3, None) if only is not None else slice(3, -1))
        self._run_key = itemgetter(0) if only is not None else itemgetter(0, -1)

    def convert(self, rows: list[tuple[Any, ...]]) -> list[RawChange]:
        """The events of the next rows of the window, in order."""
        if not rows:
            return []
        if self.skipping or self.pending is not None:
            return self._each(rows)
        ops = list(map(_OP, rows))
        if _ONE_ROW_OPS.issuperset(ops):
            return self._runs(rows, ops, None)
        if _ALL_OPS.issuperset(ops) and ops[-1] != 3 and ops.count(3) == ops.count(4) and \
                all(ops[i + 1] == 4 for i, op in enumerate(ops) if op == 3):
            # Every before image (op 3) is followed by its after image (op 4): one event per row but the 3s.
            events = [r for r, op in zip(rows, ops) if op != 3]
            befores = [rows[i - 1] if op == 4 else None for i, op in enumerate(ops) if op != 3]
            return self._runs(events, [op for op in ops if op != 3], befores)
        return self._each(rows)

    def _runs(self, rows: list[tuple[Any, ...]], ops: list[int], befores: list[Any] | None) -> list[RawChange]:
        """Events of ``rows`` (inserts, deletes, the after images of updates with ``befores``: their before images,
        None for the others), a run of one transaction (and table) at a time."""
        out: list[RawChange] = []
        server, db, times, only, data_of = self.server, self.db, self.times, self.only, self._data
        version, connector = DEBEZIUM_VERSION, CONNECTOR
        at = 0
        for _, group in groupby(rows, self._run_key):
            run = list(group)
            first = run[0]
            if first[0] != self.commit:
                commit = bytes(first[0])
                self.commit, self.commit_text, self.ts_us, self.change = commit, lsn_text(commit), times.get(commit, 0), None
            table = only if only is not None else first[-1]
            run_ops = ops[at:at + len(run)]
            run_befores = befores[at:at + len(run)] if befores is not None else None
            at += len(run)
            changes = [r[1] for r in run]
            if changes[0].__class__ is not bytes:
                changes = list(map(bytes, changes))
            texts = list(map(bytes.hex, changes, repeat(":"), repeat(-4)))
            # event_serial_no: an update counts 2 (its two rows), the others 1, summed over events at one change LSN.
            counts: Any = repeat(1) if 4 not in run_ops else [2 if op == 4 else 1 for op in run_ops]
            serials: Any
            if changes[0] != self.change and len(set(changes)) == len(changes):
                serials = counts  # every event at its own change LSN
                self.serial = 2 if run_ops[-1] == 4 else 1
            else:
                serials, change, serial = [], self.change, self.serial
                for c, count in zip(changes, counts):
                    serial = serial + count if c == change else count
                    change = c
                    serials.append(serial)
                self.serial = serial
            self.change, self.change_text = changes[-1], texts[-1]
            commit_text, ts_us = self.commit_text, self.ts_us
            ts_ms, ts_ns = ts_us // 1000, ts_us * 1000
            schema, name = table.id.schema or "", table.id.table
            # Copies of one source block and offset per run with the two keys that change set: a dict's copy
            # clones its key table, less than half the work of a 14-key literal.
            every_first = serials.__class__ is repeat  # every event_serial_no 1: in the template
            source = {"version": version, "connector": connector, "name": server, "ts_ms": ts_ms, "snapshot": "false",
                      "db": db, "sequence": None, "ts_us": ts_us, "ts_ns": ts_ns, "schema": schema, "table": name,
                      "change_lsn": None, "commit_lsn": commit_text, "event_serial_no": 1 if every_first else None}
            offset = {"commit_lsn": commit_text, "change_lsn": None, "event_serial_no": 1 if every_first else None}
            sources = list(map(dict.copy, repeat(source, len(run))))
            offsets = list(map(dict.copy, repeat(offset, len(run))))
            if every_first:
                for s, o, t in zip(sources, offsets, texts):
                    s["change_lsn"] = o["change_lsn"] = t
            else:
                for s, o, t, n in zip(sources, offsets, texts, serials):
                    s["change_lsn"] = o["change_lsn"] = t
                    s["event_serial_no"] = o["event_serial_no"] = n
            if 1 not in run_ops and 4 not in run_ops:
                out += map(_new_change, zip(repeat(table), repeat("c"), repeat(None), map(data_of, run), sources,
                                            offsets, repeat(commit_text), repeat(None)))
            elif run_befores is None or 4 not in run_ops:
                out += [_new_change((table, "c", None, d, s, o, commit_text, None) if op == 2 else
                                    (table, "d", d, None, s, o, commit_text, None))
                        for op, d, s, o in zip(run_ops, map(data_of, run), sources, offsets)]
            else:
                out += [_new_change((table, "c", None, d, s, o, commit_text, None) if op == 2 else
                                    (table, "u", data_of(b), d, s, o, commit_text, None) if op == 4 else
                                    (table, "d", d, None, s, o, commit_text, None))
                        for op, d, b, s, o in zip(run_ops, map(data_of, run), run_befores, sources, offsets)]
        self.emitted = True
        return out

    def _each(self, rows: list[tuple[Any, ...]]) -> list[RawChange]:
        """Any rows, one by one: updates paired, rows delivered before a restart skipped."""
        out: list[RawChange] = []
        append = out.append
        server, db, times, only, data_of = self.server, self.db, self.times, self.only, self._data
        pending, skipping = self.pending, self.skipping
        start, start_serial, seen_at_start = self.start, self.start_serial, self.seen_at_start
        last_commit, last_change = self.commit, self.change
        commit_text, change_text, serial, ts_us = self.commit_text, self.change_text, self.serial, self.ts_us
        for row in rows:
            commit, change, op = row[0], row[1], row[2]
            if pending is None:
                if skipping:
                    position = (bytes(commit), bytes(change))
                    if position < start:
                        continue
                    if position == start:
                        if seen_at_start <= start_serial:  # rows at the stored position, delivered before
                            seen_at_start += 1
                            continue
                    else:
                        skipping = False  # positions only grow from here: nothing more was delivered before
                if op == 3:
                    pending = row
                    continue
                before = None
                count = 1
            else:
                if op != 4:
                    table = only if only is not None else row[-1]
                    raise ConnectorError(f"the update before image at {lsn_text(bytes(commit))}:"
                                         f"{lsn_text(bytes(change))} of table {table.id} was not followed by its "
                                         "after image (__$operation 4)")
                before, pending = pending, None
                count = 2
            # The event: its position, event_serial_no, source block and offset as Debezium sets them.
            if commit != last_commit:
                last_commit = commit = bytes(commit)
                commit_text = lsn_text(commit)
                ts_us = times.get(commit, 0)
                last_change = None
            if change != last_change:
                last_change = change = bytes(change)
                change_text = lsn_text(change)
                serial = count
            else:
                serial += count
            self.emitted = True
            table = only if only is not None else row[-1]
            data = data_of(row)
            source = {"version": DEBEZIUM_VERSION, "connector": CONNECTOR, "name": server, "ts_ms": ts_us // 1000,
                      "snapshot": "false", "db": db, "sequence": None, "ts_us": ts_us, "ts_ns": ts_us * 1000,
                      "schema": table.id.schema or "", "table": table.id.table, "change_lsn": change_text,
                      "commit_lsn": commit_text, "event_serial_no": serial}
            offset = {"commit_lsn": commit_text, "change_lsn": change_text, "event_serial_no": serial}
            if op == 2:
                append(_new_change((table, "c", None, data, source, offset, commit_text, None)))
            elif op == 4:
                append(_new_change((table, "u", data_of(before), data, source, offset, commit_text, None)))
            else:
                append(_new_change((table, "d", data, None, source, offset, commit_text, None)))
        self.pending, self.skipping, self.seen_at_start = pending, skipping, seen_at_start
        self.commit, self.change = last_commit, last_change
        self.commit_text, self.change_text, self.serial, self.ts_us = commit_text, change_text, serial, ts_us
        return out
