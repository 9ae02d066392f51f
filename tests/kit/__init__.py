"""The conformance and fault kit: one set of scenarios for every connector that declares a fixture.

``contract.ConnectorFixture`` is what a connector provides (``postgres.PostgresFixture``,
``mariadb.MariaDBFixture``); ``FIXTURES`` lists them, and the ``connector`` pytest fixture
(``kit.plugin``) runs each ``tests/test_kit_*.py`` scenario once per entry. ``workload`` writes,
``replay`` checks what was captured, ``run`` drives ``cdc run`` as a subprocess; ``scenarios`` plays
each connector's data-driven acceptance scenarios (its differences in ``scenarios_<connector>``).
"""

from __future__ import annotations

import os

from kit.contract import Column, ConnectorFixture, Table, Workdir, sanitize_topic
from kit.replay import Replayed, payload, replay
from kit.run import start_cdc, wait_replayed
from kit.workload import ITEMS, Writer, insert_rows, read_rows

#: pytest id -> (module, class, server fixture, database fixture): the connectors every scenario runs for.
FIXTURES: dict[str, tuple[str, str, str, str]] = {
    "postgres": ("kit.postgres", "PostgresFixture", "pg_server", "pg_db"),
    "mariadb": ("kit.mariadb", "MariaDBFixture", "mariadb_server", "mariadb_db"),
    "yugabyte": ("kit.yugabyte", "YugabyteFixture", "pg_server", "pg_db"),  # on the PostgreSQL stand-in
    "sqlserver": ("kit.sqlserver", "SqlServerFixture", "pg_server", "pg_db"),  # on its stand-in
    "db2": ("kit.db2", "Db2Fixture", "pg_server", "pg_db"),  # on its stand-in
}

#: ``CDC_SOAK=1``: the full variants (long storms); otherwise the quick ones CI runs.
SOAK = os.environ.get("CDC_SOAK") == "1"

__all__ = ["FIXTURES", "ITEMS", "SOAK", "Column", "ConnectorFixture", "Replayed", "Table", "Workdir", "Writer",
           "insert_rows", "payload", "read_rows", "replay", "sanitize_topic", "start_cdc", "wait_replayed"]
