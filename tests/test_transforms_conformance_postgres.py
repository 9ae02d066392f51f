"""Transform chains against the real Debezium: both engines apply the same ``transforms=``, every field compared.

Debezium 3.0.7's embedded engine applies the chain itself (Debezium's SMTs and Kafka Connect 3.9's
transforms jar); cdc applies its own. The chains are ``tests/data/transforms/conformance.yaml``; the
workload is the PostgreSQL conformance workload without the type tables. Every difference must
have a reason in ``tests/conformance/known_differences.yaml``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conformance.check import assert_conforms, require_real_debezium
from conformance.harness import capture
from conformance.workload import Workload
from test_conformance_postgres import _side

GROUPS = yaml.safe_load((Path(__file__).parent / "data" / "transforms" / "conformance.yaml").read_text())["groups"]
WORKLOAD = Workload("postgres")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("group", list(GROUPS))
def test_transform_chain_as_debezium_applies_it(pg_server, pg_db, tmp_path, group):
    require_real_debezium()
    properties = dict(GROUPS[group]["properties"])
    run = capture(_side(pg_server, pg_db), WORKLOAD.spec["setup"], list(WORKLOAD.spec["stream"]), properties, tmp_path)
    flattened = [r for records in run.cdc.values() for r in records
                 if isinstance(r.get("value"), dict) and "__op" in (r["value"].get("payload") or {})]
    assert flattened, "no record was flattened: the chain did not apply"
    assert_conforms(run, "postgres", f"transforms/{group}", tmp_path)
