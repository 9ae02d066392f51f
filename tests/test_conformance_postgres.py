"""PostgreSQL against the real Debezium: one workload through both on one server, every field compared.

The workload and property groups are ``tests/conformance/postgres.yaml``; the comparison and its
list of what two readers cannot agree on are ``tests/conformance/compare.py``; every remaining
difference must be on the reasoned list ``tests/conformance/known_differences.yaml``. Each record
cdc writes also goes through Kafka's own ``JsonConverter.toConnectData`` and out again unchanged.
The quick variant runs the groups marked ``ci``; ``CDC_SOAK=1`` runs them all.
"""

from __future__ import annotations

import uuid

import pytest

from conformance.check import require_real_debezium
from conformance.harness import END_TABLE, PING_TABLE, Side
from conformance.workload import Workload

WORKLOAD = Workload("postgres")
#: The signal scenarios (tests/conformance/postgres_signals.yaml): ad hoc snapshots through the signal table.
SIGNALS = Workload("postgres", "postgres_signals")


def _side(pg_server, dbname: str) -> Side:
    def execute(text: str) -> None:
        with pg_server.connect(dbname) as conn:
            conn.execute(text)

    suffix = uuid.uuid4().hex[:8]
    return Side(
        connector_class="io.debezium.connector.postgresql.PostgresConnector",
        common={"database.hostname": pg_server.host, "database.port": pg_server.port,
                "database.user": pg_server.user, "database.password": "unused", "database.dbname": dbname,
                "plugin.name": "pgoutput", "heartbeat.interval.ms": "0"},
        debezium_only={"slot.name": f"dbz_{suffix}", "publication.name": f"dbz_pub_{suffix}"},
        cdc_only={"slot.name": f"cdc_{suffix}", "publication.name": f"cdc_pub_{suffix}"},
        execute=execute,
        qualified=lambda table: f"public.{table}",
        control_ddl=f"CREATE TABLE {PING_TABLE} (id serial PRIMARY KEY); CREATE TABLE {END_TABLE} (id int PRIMARY KEY);",
    )


def _type_tables(pg_server, dbname: str):
    """Setup and stream steps for the type tables of tests/data/postgres_types.yaml."""
    from test_postgres_types_e2e import DATA, FamilyCase, _create_tables, _families, _insert_rows, _prepare_database

    excluded = WORKLOAD.spec.get("types_excluded", {})
    with pg_server.connect(dbname) as conn:
        missing = _prepare_database(conn)
        for name in excluded:
            conn.execute(f"DROP DOMAIN {name}")
        families = {}
        for name, fam in _families(next(iter(DATA["mode_sets"]))).items():
            columns = [c for c in fam.columns if not any(x in c.type for x in excluded)]
            if columns and not set(DATA["families"][name].get("requires", ())) & set(missing):
                families[name] = FamilyCase(name, columns)
        _create_tables(conn, families)
        _insert_rows(conn, families, 0)

    def stream() -> None:
        with pg_server.connect(dbname) as conn:
            _insert_rows(conn, families, 1000)

    return stream


@pytest.mark.timeout(600)
@pytest.mark.parametrize("group", WORKLOAD.groups)
def test_every_field_as_debezium_writes_it(pg_server, pg_db, tmp_path, group):
    require_real_debezium()
    types = _type_tables(pg_server, pg_db) if WORKLOAD.with_types else None
    WORKLOAD.check(_side(pg_server, pg_db), group, tmp_path, types)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("group", SIGNALS.groups)
def test_signals_as_debezium_handles_them(pg_server, pg_db, tmp_path, group):
    """An ad hoc snapshot signalled through a signal table the include list leaves out: READs, the signal table's
    topic (its signal and watermark rows), transactions, all compared with Debezium's."""
    require_real_debezium()
    SIGNALS.check(_side(pg_server, pg_db), group, tmp_path)
