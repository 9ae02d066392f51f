"""Transform chains against the real Debezium: both engines apply the same ``transforms=``, every field compared.

Debezium 3.0.7's embedded engine applies the chain itself (Debezium's SMTs and Kafka Connect 3.9's
transforms jar); cdc applies its own. The chains are ``tests/data/transforms/conformance.yaml``; the
workload is the PostgreSQL conformance workload without the type tables. Every difference must
have a reason in ``tests/conformance/known_differences.yaml``; a flattened field's difference is
explained by the reason given for the same field in the envelope's ``after``/``before`` (the type
differences of the type tables, reasoned there once).
"""

from __future__ import annotations

from pathlib import Path

import os

import pytest
import yaml

from conformance.check import KNOWN, require_real_debezium, roundtrip_changes
from conformance.compare import Difference, compare
from conformance.harness import Capture, capture
from conformance.known import summary, unexplained
from conformance.workload import Workload
from test_conformance_postgres import _side, _type_tables

#: The chains; those marked ``soak`` (the type tables) run only with ``CDC_SOAK=1``.
GROUPS = {name: g for name, g in
          yaml.safe_load((Path(__file__).parent / "data" / "transforms" / "conformance.yaml").read_text())["groups"].items()
          if os.environ.get("CDC_SOAK") == "1" or not g.get("soak")}
WORKLOAD = Workload("postgres")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("group", list(GROUPS))
def test_transform_chain_as_debezium_applies_it(pg_server, pg_db, tmp_path, group):
    require_real_debezium()
    properties = dict(GROUPS[group]["properties"])
    steps = list(WORKLOAD.spec["stream"])
    if GROUPS[group].get("types"):
        steps.append(_type_tables(pg_server, pg_db))
    run = capture(_side(pg_server, pg_db), WORKLOAD.spec["setup"], steps, properties, tmp_path)
    flattened = [r for records in run.cdc.values() for r in records
                 if isinstance(r.get("value"), dict) and "__op" in (r["value"].get("payload") or {})]
    assert flattened, "no record was flattened: the chain did not apply"
    _assert_conforms(run, f"transforms/{group}", tmp_path)


def _as_envelope(d: Difference) -> list[Difference]:
    """The same difference at the place the field has in an unflattened change event."""
    out = []
    for side in ("after", "before"):
        for flat, nested in (("value.payload.", f"value.payload.{side}."),
                             ("value.schema.fields.", f"value.schema.fields.{side}.fields.")):
            if d.path.startswith(flat):
                out.append(Difference(d.topic, d.index, d.op, nested + d.path[len(flat):], d.debezium, d.cdc))
    return out


def _assert_conforms(run: Capture, group: str, workdir: Path, connector: str = "postgres") -> None:
    """As ``conformance.check.assert_conforms``, with flattened fields judged by their envelope reasons."""
    result = compare(run.debezium, run.cdc, "conformance")
    print(f"\nconformance {connector}/{group}: {summary(result, KNOWN, connector, group)}")
    left = [d for d in unexplained(result, KNOWN, connector, group)
            if not any(not unexplained(_Single(e), KNOWN, connector, group) for e in _as_envelope(d))]
    (workdir / "differences.txt").write_text("\n".join(d.line() for d in result.differences))
    assert not left, f"{len(left)} difference(s) with no reason:\n" + "\n".join(d.line() for d in left[:60])
    explained = {(d.topic, d.index, d.path) for d in result.differences} - {(d.topic, d.index, d.path) for d in left}
    changed = roundtrip_changes(run, explained, workdir)
    assert not changed, "changes through Kafka's JsonConverter:\n" + "\n".join(changed[:30])


class _Single:
    """A comparison holding one difference (what ``unexplained`` reads)."""

    def __init__(self, d: Difference):
        self.differences = [d]
