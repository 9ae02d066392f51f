"""The reasoned list of differences from the real Debezium (``known_differences.yaml``) and the verdict.

Every difference the comparison finds must match an entry: a path pattern with the reason cdc
writes something else. Entries say which kind of reason they give:

* ``debezium-3.0``: Debezium 3.0.7 (the engine the suite runs) does this, 2.7 (the spec) did not;
  checked against Debezium 2.7.4's source.
* ``two-readers``: cannot be equal between two readers of one log (beyond ``compare.IGNORED``).
* ``mariadb``: Debezium's MySQL connector reading MariaDB, where the MariaDB connector (which cdc
  follows) differs.
* ``decided``: Debezium is arguably wrong here; cdc writes what the reason says.
* ``open``: a difference cdc has not fixed yet (the issue tracks it); it must go away.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from conformance.compare import Comparison, Difference

KINDS = ("debezium-3.0", "two-readers", "mariadb", "decided", "open")


@dataclass
class Known:
    """One reasoned difference."""

    connector: str
    kind: str
    topic: re.Pattern[str]
    op: str
    path: re.Pattern[str]
    reason: str
    groups: tuple[str, ...]

    def matches(self, connector: str, group: str, d: Difference) -> bool:
        """True if ``d`` (found under ``group``) is this difference."""
        return (self.connector in ("*", connector) and (not self.groups or group in self.groups)
                and (self.op == "*" or self.op == d.op) and bool(self.topic.search(d.topic))
                and bool(self.path.search(d.path)))


def load(path: Path) -> list[Known]:
    """Read the list; a malformed entry fails naming it."""
    out = []
    for i, entry in enumerate(yaml.safe_load(path.read_text(encoding="utf-8")) or []):
        try:
            kind = entry["kind"]
            if kind not in KINDS:
                raise ValueError(f"kind {kind!r} is not one of {KINDS}")
            if not str(entry.get("reason", "")).strip():
                raise ValueError("has no reason")
            out.append(Known(entry.get("connector", "*"), kind, re.compile(entry.get("topic", "")),
                             str(entry.get("op", "*")), re.compile(entry["path"]), entry["reason"],
                             tuple(entry.get("groups", ()))))
        except (KeyError, ValueError, re.error) as e:
            raise ValueError(f"{path.name} entry {i + 1}: {e}") from e
    return out


def unexplained(result: Comparison, known: list[Known], connector: str, group: str) -> list[Difference]:
    """The differences no entry gives a reason for."""
    return [d for d in result.differences if not any(k.matches(connector, group, d) for k in known)]


def summary(result: Comparison, known: list[Known], connector: str, group: str) -> dict[str, Any]:
    """Counts per kind of reason, for the test's report line."""
    counts: dict[str, int] = {}
    for d in result.differences:
        kind = next((k.kind for k in known if k.matches(connector, group, d)), "unexplained")
        counts[kind] = counts.get(kind, 0) + 1
    return {"fields": result.fields, "identical": result.identical, "ratio": round(result.ratio, 4), **counts}
