"""CloudEvents against the real Debezium: its CloudEventsConverter and cdc's on the same PostgreSQL changes.

The runner (``tests/conformance/DebeziumRunner.java``, ``runner.value.converter``) writes values
with Debezium 3.0.7's ``io.debezium.converters.CloudEventsConverter``; cdc runs as a Debezium
Server user runs it with ``debezium.format.value=cloudevents``. Every attribute and the whole
``data`` are compared, type-exact and in order, except what two readers of one log cannot agree
on (``IGNORED``, each with its reason) and the differences ``KNOWN`` lists with theirs.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.check import require_real_debezium
from conformance.harness import capture
from test_conformance_postgres import _side

#: Attributes two readers of one log cannot write alike, per op ("*": every op), with the reason.
IGNORED: dict[str, dict[str, str]] = {
    "*": {"iodebeziumversion": "the engine's release (cdc writes the 2.7 release it reproduces)"},
    "r": {name: "each reader takes its own snapshot, at its own time, slot position and transaction"
          for name in ("id", "time", "iodebeziumtsms", "iodebeziumtsus", "iodebeziumtsns", "iodebeziumlsn",
                       "iodebeziumtxId", "iodebeziumsequence", "iodebeziumxmin")},
}
#: Differences between cdc and Debezium 3.0.7 that are accepted, with the reason (none so far).
KNOWN: dict[str, str] = {}

TABLE = "fmt_ce"
SETUP = f"""
CREATE TABLE {TABLE} (id int PRIMARY KEY, name text, amount numeric(10,2), data bytea, at timestamptz,
                      flag boolean, tags text[]);
INSERT INTO {TABLE} VALUES (1, 'Bob', 12.34, '\\x0102', '2020-01-13 13:55:39.738+00', true, '{{a,b}}'),
                           (2, NULL, NULL, NULL, NULL, NULL, NULL);
"""
STEPS = [
    f"BEGIN; INSERT INTO {TABLE} VALUES (3, 'Ann', -0.5, '\\x', '1969-12-31 23:59:59.999+00', false, '{{}}');"
    f" INSERT INTO {TABLE} VALUES (4, 'Zoë', 99999999.99, NULL, NULL, NULL, NULL); COMMIT;",
    f"UPDATE {TABLE} SET name = 'Robert', amount = amount + 1 WHERE id = 1",
    f"DELETE FROM {TABLE} WHERE id = 2",
]
GROUPS = {
    "defaults": {},
    # (extension.attributes.enable=false is left to test_formats_cloudevents.py: without iodebeziumop the harness
    # cannot tell a streamed ping from a snapshot read.)
    "no-data-schema": {"value.converter.json.schemas.enable": "false"},
}


def _differences(debezium: dict[str, list[dict[str, Any]]], cdc: dict[str, list[dict[str, Any]]]) -> list[str]:
    out: list[str] = []
    for topic in sorted(set(debezium) | set(cdc)):
        a, b = debezium.get(topic, []), cdc.get(topic, [])
        if len(a) != len(b):
            out.append(f"{topic}: debezium wrote {len(a)} records, cdc {len(b)}")
            continue
        for i, (x, y) in enumerate(zip(a, b)):
            if x.get("key") != y.get("key"):
                out.append(f"{topic}[{i}] key: debezium={x.get('key')!r} cdc={y.get('key')!r}")
            ev_a, ev_b = x.get("value"), y.get("value")
            if not isinstance(ev_a, dict) or not isinstance(ev_b, dict):
                if ev_a != ev_b:
                    out.append(f"{topic}[{i}] value: debezium={ev_a!r:.200} cdc={ev_b!r:.200}")
                continue
            op = ev_a.get("iodebeziumop", "?")
            skip = {**IGNORED["*"], **IGNORED.get(op, {})}
            names_a = [n for n in ev_a if n not in skip]
            names_b = [n for n in ev_b if n not in skip]
            if names_a != names_b:
                out.append(f"{topic}[{i}] op={op} attributes: debezium={names_a} cdc={names_b}")
            for name in names_a:
                va, vb = ev_a.get(name), ev_b.get(name, "<absent>")
                if not (type(va) is type(vb) and va == vb) and name not in KNOWN:
                    out.append(f"{topic}[{i}] op={op} {name}: debezium={va!r:.300} cdc={vb!r:.300}")
    return out


@pytest.mark.timeout(600)
@pytest.mark.parametrize("group", sorted(GROUPS))
def test_cloudevents_as_debezium_writes_them(pg_server, pg_db, tmp_path, group) -> None:
    """The same changes through Debezium's CloudEventsConverter and cdc's: every attribute and data alike."""
    require_real_debezium()
    properties = {"table.include.list": f"public.{TABLE}", "provide.transaction.metadata": "true",
                  "value.converter": "io.debezium.converters.CloudEventsConverter", **GROUPS[group]}
    got = capture(_side(pg_server, pg_db), SETUP, list(STEPS), properties, tmp_path)
    topic = f"conformance.public.{TABLE}"
    values = [r["value"] for r in got.cdc.get(topic, []) if r.get("value")]
    if group == "defaults":
        ops = [v.get("iodebeziumop") for v in values]
        assert ops == ["r", "r", "c", "c", "u", "d"], ops
        assert all(v["iodebeziumtxid"] for v in values if v["iodebeziumop"] != "r")
    # Transaction metadata values are null on both sides (the converter writes null for what is not a change
    # event); how many there are depends on the pings each engine saw, which null values no longer tell apart.
    for capture_ in (got.debezium, got.cdc):
        assert all(r["value"] is None for r in capture_.pop("conformance.transaction", []))
    assert len(got.debezium.get(topic, [])) >= 6
    differences = _differences(got.debezium, got.cdc)
    assert not differences, "\n".join(differences)
