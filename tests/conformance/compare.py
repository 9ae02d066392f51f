"""Field-by-field comparison of two captures of one log: what cdc wrote against what Debezium wrote.

Records are compared per topic, in order; keys, values and headers as JSON, type-exact (``1``,
``1.0`` and ``true`` differ). What two readers of one log cannot agree on is left out here, and
only here (``IGNORED``); every other difference is reported with its path, and the suite accepts it
only when ``known_differences.yaml`` gives a reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

#: Paths left out of the comparison, because two readers of one log cannot write the same value:
#: processing times, the engine's own version, and where a snapshot read stands in the log (each
#: reader takes its own snapshot at its own position). A path is dotted; ``*`` matches one step.
#: Each entry: (topic kind or "*", op or "*", path pattern, reason).
IGNORED: list[tuple[str, str, str, str]] = [
    ("*", "*", "value.payload.ts_ms", "the time the engine processed the event"),
    ("*", "*", "value.payload.ts_us", "the time the engine processed the event"),
    ("*", "*", "value.payload.ts_ns", "the time the engine processed the event"),
    ("*", "*", "value.payload.source.version", "the engine's release"),
    ("*", "r", "value.payload.source.ts_ms", "a snapshot read's time is when that reader read it"),
    ("*", "r", "value.payload.source.ts_us", "a snapshot read's time is when that reader read it"),
    ("*", "r", "value.payload.source.ts_ns", "a snapshot read's time is when that reader read it"),
    ("*", "r", "value.payload.source.lsn", "each reader's snapshot stands at its own slot's position"),
    ("*", "r", "value.payload.source.txId", "each reader's snapshot is its own transaction"),
    ("*", "r", "value.payload.source.sequence", "each reader's snapshot stands at its own slot's position"),
    ("*", "r", "value.payload.source.xmin", "each reader's snapshot is its own transaction"),
    ("*", "r", "value.payload.source.file", "each reader's snapshot stands at its own binlog position"),
    ("*", "r", "value.payload.source.pos", "each reader's snapshot stands at its own binlog position"),
    ("*", "r", "value.payload.source.gtid", "each reader's snapshot stands at its own binlog position"),
    ("schema", "r", "value.payload.source.file", "each reader's snapshot stands at its own binlog position"),
    ("schema", "r", "value.payload.source.pos", "each reader's snapshot stands at its own binlog position"),
    ("schema", "r", "value.payload.source.ts_ms", "a snapshot's schema is read when that reader reads it"),
    ("schema", "r", "value.payload.position.*", "each reader's snapshot stands at its own binlog position"),
    ("schema", "*", "value.payload.ts_ms", "the time the engine processed the event"),
]


def _pattern(path: str) -> re.Pattern[str]:
    return re.compile("^" + r"\.".join("[^.]+" if p == "*" else re.escape(p) for p in path.split(".")) + "$")


_IGNORED = [(kind, op, _pattern(path)) for kind, op, path, _ in IGNORED]


@dataclass
class Difference:
    """One path where the two captures disagree (or a record only one of them has)."""

    topic: str
    index: int
    op: str
    path: str
    debezium: Any
    cdc: Any

    def line(self) -> str:
        """A one-line description for an assertion message."""
        return f"{self.topic}[{self.index}] op={self.op} {self.path}: debezium={_short(self.debezium)} cdc={_short(self.cdc)}"


@dataclass
class Comparison:
    """The outcome over all topics: fields compared and identical, and each difference."""

    fields: int = 0
    identical: int = 0
    differences: list[Difference] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        """The share of identical fields."""
        return self.identical / self.fields if self.fields else 1.0


def _short(value: Any, limit: int = 160) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _op(record: dict[str, Any]) -> str:
    value = record.get("value")
    payload = value.get("payload") if isinstance(value, dict) and "schema" in value else value
    if payload is None:
        return "tombstone"
    if isinstance(payload, dict):
        if "op" in payload:
            return str(payload["op"])
        if "__op" in payload:  # flattened by ExtractNewRecordState with add.fields=op
            return str(payload["__op"])
        if "status" in payload:
            return str(payload["status"])
        if "ddl" in payload or "tableChanges" in payload:
            snapshot = (payload.get("source") or {}).get("snapshot")
            return "r" if snapshot not in (None, "false", False) else "ddl"
    return "?"


def _ignored(kind: str, op: str, path: str) -> bool:
    return any((k == "*" or k == kind) and (o == "*" or o == op) and p.match(path) for k, o, p in _IGNORED)


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _walk(kind: str, op: str, path: str, a: Any, b: Any, out: Comparison, topic: str, index: int) -> None:
    if _ignored(kind, op, path):
        return
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b) and set(a) == set(b):
            out.fields += 1
            out.differences.append(Difference(topic, index, op, path + " (field order)", list(a), list(b)))
        for key in list(a) + [k for k in b if k not in a]:
            sub = f"{path}.{key}"
            if key not in a or key not in b:
                if not _ignored(kind, op, sub):
                    out.fields += 1
                    out.differences.append(Difference(topic, index, op, sub, a.get(key, "<absent>"), b.get(key, "<absent>")))
                continue
            _walk(kind, op, sub, a[key], b[key], out, topic, index)
        return
    if isinstance(a, list) and isinstance(b, list) and _is_fields(a) and _is_fields(b):
        # A struct schema's fields, matched by name: one difference for their order, one per field
        # only one side has, and the fields' own differences under their names.
        names_a, names_b = [x["field"] for x in a], [y["field"] for y in b]
        by_name = {y["field"]: y for y in b}
        if names_a != names_b and set(names_a) == set(names_b):
            out.fields += 1
            out.differences.append(Difference(topic, index, op, path + " (field order)", names_a, names_b))
        for x in a:
            sub = f"{path}.{x['field']}"
            if x["field"] in by_name:
                _walk(kind, op, sub, x, by_name[x["field"]], out, topic, index)
            elif not _ignored(kind, op, sub):
                out.fields += 1
                out.differences.append(Difference(topic, index, op, sub, x, "<absent>"))
        for y in b:
            sub = f"{path}.{y['field']}"
            if y["field"] not in names_a and not _ignored(kind, op, sub):
                out.fields += 1
                out.differences.append(Difference(topic, index, op, sub, "<absent>", y))
        return
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _walk(kind, op, f"{path}[{i}]", x, y, out, topic, index)
        return
    out.fields += 1
    if _same(a, b):
        out.identical += 1
    else:
        out.differences.append(Difference(topic, index, op, path, a, b))


def _is_fields(items: list[Any]) -> bool:
    return bool(items) and all(isinstance(x, dict) and "field" in x for x in items)


def topic_kind(topic: str, prefix: str) -> str:
    """``data``, ``transaction``, ``schema`` (the schema change topic) or ``message`` for a topic name."""
    if topic == f"{prefix}.transaction":
        return "transaction"
    if topic == prefix:
        return "schema"
    if topic.startswith(f"{prefix}.message"):
        return "message"
    return "data"


def compare(debezium: dict[str, list[dict[str, Any]]], cdc: dict[str, list[dict[str, Any]]], prefix: str) -> Comparison:
    """Compare two captures, each a mapping of topic to its records in order."""
    out = Comparison()
    for topic in sorted(set(debezium) | set(cdc)):
        kind = topic_kind(topic, prefix)
        a, b = debezium.get(topic, []), cdc.get(topic, [])
        for i in range(max(len(a), len(b))):
            if i >= len(a) or i >= len(b):
                present = a[i] if i < len(a) else b[i]
                out.fields += 1
                out.differences.append(Difference(topic, i, _op(present), "<record>",
                                                  _summary(a[i]) if i < len(a) else "<absent>",
                                                  _summary(b[i]) if i < len(b) else "<absent>"))
                continue
            op = _op(a[i])
            for part in ("key", "value", "headers"):
                _walk(kind, op, part, a[i].get(part), b[i].get(part), out, topic, i)
    return out


def _summary(record: dict[str, Any]) -> str:
    value = record.get("value")
    payload = value.get("payload") if isinstance(value, dict) and "schema" in value else value
    if isinstance(payload, dict):
        return f"op={_op(record)} after={_short(payload.get('after'), 80)} before={_short(payload.get('before'), 80)}"
    return _short(payload, 120)
