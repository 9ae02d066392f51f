"""MariaDB against the real Debezium: one workload through both on one server, every field compared.

Debezium's side is 3.0.7's MySQL connector (the wheel carries no MariaDB connector) reading the
throwaway MariaDB 10.11; cdc's side is its MariaDB connector. Where Debezium's MySQL and MariaDB
connectors differ, ``known_differences.yaml`` lists it with kind ``mariadb``. The workload and
groups are ``tests/conformance/mariadb.yaml``; the quick variant runs the groups marked ``ci``,
``CDC_SOAK=1`` all of them.
"""

from __future__ import annotations

import os
import random
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.check import assert_conforms, require_real_debezium
from conformance.harness import END_TABLE, PING_TABLE, Side, capture

HERE = Path(__file__).parent
WORKLOAD = yaml.safe_load((HERE / "conformance" / "mariadb.yaml").read_text(encoding="utf-8"))
SOAK = os.environ.get("CDC_SOAK") == "1"
GROUPS = [name for name, g in WORKLOAD["groups"].items() if SOAK or g.get("ci")]


def _statements(text: str) -> list[str]:
    """A step's statements: split where a line ends with ";"."""
    return [s.strip() for s in re.split(r";[ \t]*(?:\n|$)", text) if s.strip()]


def _side(server, database: str) -> Side:
    def execute(text: str) -> None:
        server.execute(_statements(text), database=database)

    server_ids = random.sample(range(100_000, 4_000_000), 2)
    return Side(
        connector_class="io.debezium.connector.mysql.MySqlConnector",
        common={"database.hostname": server.host, "database.port": server.port, "database.user": server.user,
                "database.password": server.password, "database.include.list": database},
        debezium_only={"database.server.id": server_ids[0],
                       "schema.history.internal": "io.debezium.relational.history.MemorySchemaHistory"},
        cdc_only={"connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
                  "database.server.id": server_ids[1]},
        execute=execute,
        qualified=lambda table: f"{database}.{table}",
        control_ddl=(f"CREATE TABLE {PING_TABLE} (id INT AUTO_INCREMENT PRIMARY KEY);\n"
                     f"CREATE TABLE {END_TABLE} (id INT PRIMARY KEY);"),
    )


def _type_tables(server, database: str):
    """Setup and stream steps for the type tables of tests/data/mariadb_types.yaml."""
    from test_mariadb_types_e2e import DATA, _create_table, _families, _insert_rows

    families = _families(next(iter(DATA["mode_sets"])))
    with server.connect(database) as conn, conn.cursor() as cur:
        for fam in families.values():
            _create_table(cur, fam, "")
            _insert_rows(cur, fam, "", 0)

    def stream() -> None:
        with server.connect(database) as conn, conn.cursor() as cur:
            for fam in families.values():
                _insert_rows(cur, fam, "", 1000)
                _create_table(cur, fam, "_ddl")
                _insert_rows(cur, fam, "_ddl", 0)

    return stream


@pytest.mark.timeout(600)
@pytest.mark.parametrize("group", GROUPS)
def test_every_field_as_debezium_writes_it(mariadb_server, mariadb_db, tmp_path, group):
    require_real_debezium()
    spec = WORKLOAD["groups"][group]
    side = _side(mariadb_server, mariadb_db)
    steps: list[Any] = list(WORKLOAD["stream"])
    if WORKLOAD.get("types"):
        steps.append(_type_tables(mariadb_server, mariadb_db))
    run = capture(side, WORKLOAD["setup"], steps, dict(spec.get("properties", {})), tmp_path)
    assert_conforms(run, "mariadb", group, tmp_path)
