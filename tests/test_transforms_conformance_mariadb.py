"""Transform chains against the real Debezium on MariaDB: both engines apply the same ``transforms=``.

Debezium 3.0.7's MySQL connector (with its own SMTs and Kafka Connect 3.9's) beside cdc's MariaDB
connector with cdc's transforms, over the MariaDB conformance workload without the type tables
(DDL, renames and truncates included: schema change events must pass the chain untouched). The
chains are ``mariadb_groups`` of ``tests/data/transforms/conformance.yaml``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conformance.check import require_real_debezium
from conformance.harness import capture
from conformance.workload import Workload
from test_conformance_mariadb import _side
from test_transforms_conformance_postgres import _assert_conforms

GROUPS = yaml.safe_load((Path(__file__).parent / "data" / "transforms" / "conformance.yaml").read_text())["mariadb_groups"]
WORKLOAD = Workload("mariadb")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("group", list(GROUPS))
def test_transform_chain_as_debezium_applies_it(mariadb_server, mariadb_db, tmp_path, group):
    require_real_debezium()
    properties = {k: str(v).replace("{db}", mariadb_db) for k, v in GROUPS[group]["properties"].items()}
    run = capture(_side(mariadb_server, mariadb_db), WORKLOAD.spec["setup"], list(WORKLOAD.spec["stream"]),
                  properties, tmp_path)
    assert any("__op" in ((r.get("value") or {}).get("payload") or {}) for rs in run.cdc.values() for r in rs), \
        "no record was flattened: the chain did not apply"
    assert "conformance" in run.cdc, "the schema change topic is missing"
    _assert_conforms(run, f"transforms/{group}", tmp_path, connector="mariadb")
