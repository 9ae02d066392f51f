"""The SQL Server chapter's example events, reproduced field for field on the stand-in (database ``testDB``).

Derived from the chapter's create/update/delete examples (``sqlserver-db2.md`` §2.1) with its printing
errors fixed as the spec's errata say: schema names are ``<topic>.Value``/``.Envelope`` with the
topic ``server1.testDB.dbo.customers`` (errata 1), ``source.snapshot`` is Debezium's string enum
(errata 3), ``event_serial_no`` an int64 (errata 4), ``ts_us``/``ts_ns`` named as such (errata 5);
Debezium 2.7's source block also has the common ``sequence`` field and the envelope the optional
``transaction`` struct (after ``source``, as 2.7 builds it), which the chapter's printout leaves out.
LSNs and times differ per run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from change_table_tests import assert_chapter_events, customers_value, source_schema, without_schema_changes
from change_table_tests import field as _field
from kit.engine import run_until
from psycopg import sql

from cdc_sqlserver.standin.server import StandIn
from cdc_sqlserver.standin.testing import CUSTOMERS
from cdc_sqlserver import odbc
from cdc_sqlserver.standin import dbapi

LSN = re.compile(r"[0-9a-f]{8}:[0-9a-f]{8}:[0-9a-f]{4}")


@pytest.fixture
def test_db(pg_server) -> Iterator[StandIn]:
    """The chapter's database ``testDB`` with ``dbo.customers``, CDC enabled, the agent running."""
    pg_server.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier("testDB")))
    pg_server.create_database("testDB")
    saved = odbc.CONNECT, odbc.DRIVERS
    dbapi.install()
    server = StandIn(pg_server, "testDB")
    try:
        server.create_table(CUSTOMERS)
        server.enable_db()
        server.enable_table("dbo", "customers")
        server.agent.start()
        yield server
    finally:
        server.agent.stop()
        odbc.install(*saved)
        pg_server.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = 'testDB'")
        pg_server.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier("testDB")))


VALUE = customers_value("server1.testDB.dbo.customers", ("id", "first_name", "last_name", "email"))
SOURCE = source_schema("sqlserver", _field("int64", "event_serial_no", True))


def test_the_chapters_create_update_and_delete_events(test_db):
    def writes():
        test_db.execute("INSERT INTO dbo.customers (id, first_name, last_name, email) "
                        "OVERRIDING SYSTEM VALUE VALUES (1005, 'john', 'doe', 'john.doe@example.org')")
        test_db.execute("UPDATE dbo.customers SET email = 'noreply@example.org' WHERE id = 1005")
        test_db.execute("DELETE FROM dbo.customers WHERE id = 1005")

    records = without_schema_changes(run_until(test_db.properties("server1"),
                                               lambda rs: len(without_schema_changes(rs)) >= 4, "4 events",
                                               action=writes).records)
    create, update, delete, tombstone = records[:4]
    assert create.topic == "server1.testDB.dbo.customers"
    # The key (§2.1.2).
    assert create.key_schema.to_json() == {"type": "struct", "fields": [_field("int32", "id")], "optional": False,
                                           "name": "server1.testDB.dbo.customers.Key"}
    assert create.key == {"id": 1005}
    # The value schema and the payloads (§2.1.3-2.1.5).
    john = {"id": 1005, "first_name": "john", "last_name": "doe", "email": "john.doe@example.org"}
    expected = {"connector": "sqlserver", "name": "server1", "snapshot": "false", "db": "testDB", "schema": "dbo",
                "table": "customers", "sequence": None}
    assert_chapter_events(create, update, delete, tombstone, VALUE, SOURCE, john, "email",
                          [{**expected, "event_serial_no": serial} for serial in (1, 2, 1)], LSN)
