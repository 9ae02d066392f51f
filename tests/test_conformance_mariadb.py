"""MariaDB against the real Debezium: one workload through both on one server, every field compared.

Debezium's side is 3.0.7's MySQL connector (the wheel carries no MariaDB connector) reading the
throwaway MariaDB 10.11; cdc's side is its MariaDB connector. Where Debezium's MySQL and MariaDB
connectors differ, ``known_differences.yaml`` lists it with kind ``mariadb``. The workload and
groups are ``tests/conformance/mariadb.yaml``; the quick variant runs the groups marked ``ci``,
``CDC_SOAK=1`` all of them.
"""

from __future__ import annotations

import random
import re

import pytest

from conformance.check import require_real_debezium
from conformance.harness import END_TABLE, PING_TABLE, Side
from conformance.workload import Workload

WORKLOAD = Workload("mariadb")
#: The signal scenarios (tests/conformance/mariadb_signals.yaml): ad hoc snapshots through the signal table.
SIGNALS = Workload("mariadb", "mariadb_signals")


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
@pytest.mark.parametrize("group", WORKLOAD.groups)
def test_every_field_as_debezium_writes_it(mariadb_server, mariadb_db, tmp_path, group):
    require_real_debezium()
    types = _type_tables(mariadb_server, mariadb_db) if WORKLOAD.with_types else None
    WORKLOAD.check(_side(mariadb_server, mariadb_db), group, tmp_path, types)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("group", SIGNALS.groups)
def test_signals_as_debezium_handles_them(mariadb_server, mariadb_db, tmp_path, group):
    """An ad hoc snapshot signalled through a signal table the include list leaves out: READs, the signal table's
    topic (its signal and watermark rows), the schema changes, transactions, all compared with Debezium's."""
    require_real_debezium()
    SIGNALS.check(_side(mariadb_server, mariadb_db), group, tmp_path)
