"""Replaying an incremental snapshot's change records: the table state they give, checked on the way."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def replay(records: Iterable[Any]) -> tuple[dict[Any, Any], int]:
    """Apply change records (``key["id"]``, ``value["after"]["v"]``) in order; the final ``{id: v}`` and the READ count.

    Asserts what a consumer of an incremental snapshot relies on: every READ is marked
    ``snapshot: incremental``, no READ follows its row's delete, and no key ever goes back to an
    older ``v`` (writers only ever increase it). Tombstones are skipped.
    """
    state: dict[Any, Any] = {}
    versions: dict[Any, int] = {}
    deleted: set[Any] = set()
    reads = 0
    for r in records:
        if r.value is None:
            continue  # tombstone
        key, op, after = r.key["id"], r.value["op"], r.value["after"]
        if op == "d":
            state[key] = None
            deleted.add(key)
            continue
        if op == "r":
            reads += 1
            assert r.value["source"]["snapshot"] == "incremental"
            assert key not in deleted, f"a READ of {key} came after its delete"
        assert after["v"] >= versions.get(key, -1), f"key {key} went back from v{versions[key]} to v{after['v']} ({op})"
        versions[key] = after["v"]
        state[key] = after
    return {k: v["v"] for k, v in state.items() if v is not None}, reads
