"""Replaying a topic's change events into table state, checking on the way what at-least-once allows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def payload(envelope: Any) -> Any:
    """The payload of a JsonConverter envelope (``{"schema", "payload"}``), or the value itself without schemas."""
    if isinstance(envelope, dict) and set(envelope) == {"schema", "payload"}:
        return envelope["payload"]
    return envelope


@dataclass
class Replayed:
    """What replaying gave: the rows by key, and what the replay noticed."""

    state: dict[tuple[Any, ...], dict[str, Any]] = field(default_factory=dict)
    #: Change events (not snapshot reads) seen before: at-least-once redeliveries.
    duplicates: int = 0
    #: Snapshot reads of a row version an earlier (interrupted) snapshot had already read.
    reread: int = 0
    #: How many snapshots began (a run of reads after anything else, or a read marked ``first``).
    snapshots: int = 0
    events: int = 0
    #: Lost changes, keys going back in time, changes of rows that were not there.
    problems: list[str] = field(default_factory=list)

    def report(self, summary: str) -> None:
        """Print ``summary`` (the run's numbers); fail with it if the replay found lost, repeated-wrong or backward changes."""
        print(summary)
        assert self.problems == [], summary + "\n" + "\n".join(self.problems[:20])

    def differences(self, rows: dict[tuple[Any, ...], dict[str, Any]], limit: int = 10) -> list[str]:
        """How the replayed state differs from ``rows`` (the table as read), at most ``limit`` lines."""
        out = []
        for key in sorted(set(rows) | set(self.state), key=repr):
            want, got = rows.get(key), self.state.get(key)
            if want is None:
                out.append(f"key {key}: in the events ({_short(got)}) but not in the table")
            elif got is None:
                out.append(f"key {key}: in the table ({_short(want)}) but not in the events")
            else:
                diff = {c: (got.get(c), v) for c, v in want.items() if got.get(c) != v}
                if diff:
                    out.append(f"key {key}: events != table in " + ", ".join(
                        f"{c}: {_short(a)} != {_short(b)}" for c, (a, b) in diff.items()))
            if len(out) >= limit:
                break
        return out


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:60] + f"...({len(text)} chars)"


def replay(events: list[dict[str, Any]], key: tuple[str, ...] = ("id",), version: str = "v",
           unavailable: str | None = None) -> Replayed:
    """Apply one topic's events (file sink lines) in order, as a consumer keeping the table would.

    Every write sets ``version`` to a value never used before, so an event is identified by its
    op, key and before/after versions: one seen before is a redelivery (counted, not applied). A
    run of snapshot reads (or a read marked ``snapshot: first``) starts the table over (a repeated snapshot replaces the table). Checked:
    an update or delete finds the row in the state it left it (no change lost in between), a create
    finds no row, and no key's version ever goes down. Columns carrying ``unavailable`` keep the
    value they had (on a key change, the value the old key's delete carried in ``before``).
    """
    out = Replayed()
    seen: set[tuple[Any, ...]] = set()
    versions: dict[tuple[Any, ...], int] = {}
    previous_op = None
    deleted: dict[str, Any] | None = None  # the row of the last delete: a key change's create may refer to it
    for line in events:
        value = payload(line["value"])
        if value is None:
            continue  # tombstone
        out.events += 1
        op, before, after = value["op"], value.get("before"), value.get("after")
        row = after if op != "d" else before
        k = tuple(payload(line["key"])[c] for c in key)
        ident = (op, k, (before or {}).get(version), (after or {}).get(version))
        if op == "r":
            if previous_op != "r" or value["source"].get("snapshot") == "first":
                out.state.clear()
                out.snapshots += 1
            if ident in seen:
                out.reread += 1
        elif ident in seen:
            out.duplicates += 1
            previous_op = op
            continue
        seen.add(ident)
        previous_op = op
        current = out.state.get(k)
        if op in ("u", "d"):
            if current is None:
                out.problems.append(f"{op} of key {k} (v{before.get(version)}) that the events never created")
            elif current.get(version) != before.get(version):
                out.problems.append(f"{op} of key {k}: before has v{before.get(version)}, the events left "
                                    f"v{current.get(version)} (a change in between was lost)")
        elif op == "c" and current is not None:
            out.problems.append(f"create of key {k} (v{after.get(version)}) while v{current.get(version)} exists "
                                "(a delete was lost)")
        if op == "d":
            out.state.pop(k, None)
            deleted = before
            continue
        assert row is not None
        if after[version] < versions.get(k, -1):
            out.problems.append(f"key {k} went back in time: v{versions[k]} then v{after[version]} ({op})")
        versions[k] = max(after[version], versions.get(k, -1))
        new = dict(row)
        if unavailable is not None:
            source = current if current is not None else deleted if op == "c" else None
            for col, val in new.items():
                if val == unavailable:
                    if source is None or source.get(col) == unavailable:
                        out.problems.append(f"{op} of key {k}: {col} unavailable and no earlier value to keep")
                    else:
                        new[col] = source.get(col)
        out.state[k] = new
    return out


def rebuild_rows(events: list[dict[str, Any]], table: str, column: str) -> dict[Any, Any]:
    """``{id: column}`` of ``table`` that replaying its events (payloads) in order gives; fails on a row read twice."""
    state: dict[Any, Any] = {}
    for e in events:
        if e["source"]["table"] != table:
            continue
        row = e["after"] or e["before"]
        if e["op"] == "r":
            assert row["id"] not in state, f"{table}: row {row['id']} read twice"
        if e["op"] == "d":
            state.pop(row["id"])
        else:
            state[row["id"]] = row[column]
    return state
