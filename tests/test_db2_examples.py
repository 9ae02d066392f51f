"""The Db2 chapter's example events, reproduced field for field on the stand-in (database ``mydatabase``).

Derived from the chapter's key, create, update and delete examples (``sqlserver-db2.md`` §2.2) with
its printing errors fixed as the spec's errata say: ``source.snapshot`` is Debezium's string enum
(errata 3), the LSNs are Db2's 16-byte ones (errata 6: ``xxxxxxxx:xxxxxxxx:xxxxxxxxxxxxxxxx``), the
JSON's trailing commas dropped; Debezium 2.7's source block also has the common ``sequence`` field
and the envelope the optional ``transaction`` struct, which the chapter's printout leaves out.
``source.name`` is the topic prefix (``mydatabase``, as the schema names show; the printout's
``myconnector`` contradicts them). LSNs and times differ per run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from change_table_tests import assert_chapter_events, customers_value, source_schema
from change_table_tests import field as _field
from kit.engine import run_until
from psycopg import sql

from cdc_db2 import driver
from cdc_db2.standin import dbapi
from cdc_db2.standin.server import StandIn
from cdc_db2.standin.testing import CUSTOMERS

LSN = re.compile(r"[0-9a-f]{8}:[0-9a-f]{8}:[0-9a-f]{16}")


@pytest.fixture
def mydatabase(pg_server) -> Iterator[StandIn]:
    """The chapter's database ``mydatabase`` with ``MYSCHEMA.CUSTOMERS`` in capture mode, asncap running."""
    pg_server.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier("mydatabase")))
    pg_server.create_database("mydatabase")
    saved = driver.CONNECT
    dbapi.install()
    server = StandIn(pg_server, "mydatabase")
    try:
        server.create_table("MYSCHEMA", "CUSTOMERS", CUSTOMERS, key=["ID"])
        server.execute('INSERT INTO "MYSCHEMA"."CUSTOMERS" ("FIRST_NAME", "LAST_NAME", "EMAIL") VALUES '
                       "('Anne', 'Kretchmar', 'annek@noanswer.org')")
        server.execute('UPDATE "MYSCHEMA"."CUSTOMERS" SET "ID" = 1004')
        server.add_table("MYSCHEMA", "CUSTOMERS")
        server.agent.start()
        yield server
    finally:
        server.agent.stop()
        driver.install(saved)
        pg_server.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                          "WHERE database = 'mydatabase'")
        pg_server.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier("mydatabase")))


VALUE = customers_value("mydatabase.MYSCHEMA.CUSTOMERS", ("ID", "FIRST_NAME", "LAST_NAME", "EMAIL"))
SOURCE = source_schema("db2")


def test_the_chapters_key_create_update_and_delete_events(mydatabase):
    def writes():
        mydatabase.execute('INSERT INTO "MYSCHEMA"."CUSTOMERS" ("ID", "FIRST_NAME", "LAST_NAME", "EMAIL") '
                           "VALUES (1005, 'john', 'doe', 'john.doe@example.org')")
        mydatabase.execute('UPDATE "MYSCHEMA"."CUSTOMERS" SET "EMAIL" = \'noreply@example.org\' WHERE "ID" = 1005')
        mydatabase.execute('DELETE FROM "MYSCHEMA"."CUSTOMERS" WHERE "ID" = 1005')

    records = run_until(mydatabase.properties("mydatabase"), lambda rs: len(rs) >= 6, "6 records",
                        action=writes).records
    schema_change, snapshot, create, update, delete, tombstone = records[:6]
    _check_schema_change(schema_change, snapshot)
    # The key (§2.2.2): the snapshot's row 1004.
    assert snapshot.topic == create.topic == "mydatabase.MYSCHEMA.CUSTOMERS"
    assert snapshot.key_schema.to_json() == {"type": "struct", "fields": [_field("int32", "ID")], "optional": False,
                                             "name": "mydatabase.MYSCHEMA.CUSTOMERS.Key"}
    assert snapshot.key == {"ID": 1004}
    # The value schema and the payloads (§2.2.3-2.2.5).
    john = {"ID": 1005, "FIRST_NAME": "john", "LAST_NAME": "doe", "EMAIL": "john.doe@example.org"}
    expected = {"connector": "db2", "name": "mydatabase", "snapshot": "false", "db": "mydatabase",
                "schema": "MYSCHEMA", "table": "CUSTOMERS", "sequence": None}
    assert_chapter_events(create, update, delete, tombstone, VALUE, SOURCE, john, "EMAIL", [expected] * 3, LSN)
    # The snapshot record: no change LSN, the commit LSN the snapshot read (the highest synchpoint).
    assert snapshot.value["source"]["snapshot"] in ("first", "last") and snapshot.value["source"]["change_lsn"] is None
    assert LSN.fullmatch(snapshot.value["source"]["commit_lsn"])
    assert snapshot.value["source"]["commit_lsn"] < create.value["source"]["commit_lsn"]


def _check_schema_change(record, snapshot) -> None:
    """The snapshot's schema change event of MYSCHEMA.CUSTOMERS (§2.2.8), on topic ``<topic.prefix>``."""
    assert record.topic == "mydatabase"
    assert record.key_schema.to_json() == {"type": "struct", "fields": [_field("string", "databaseName")],
                                           "optional": False, "name": "io.debezium.connector.db2.SchemaChangeKey",
                                           "version": 1}
    # The database's real name, CURRENT SERVER (upper case), not database.dbname: Debezium 2.7.4's
    # SchemaHistoryTopicIT.snapshotSchemaChanges expects key databaseName "TESTDB" for database.dbname=testdb,
    # while source.db stays the configured name (below).
    assert record.key == {"databaseName": "MYDATABASE"}
    value = record.value
    assert record.value_schema.to_json()["name"] == "io.debezium.connector.db2.SchemaChangeValue"
    assert {k: value[k] for k in ("databaseName", "schemaName", "ddl")} == {
        "databaseName": "MYDATABASE", "schemaName": "MYSCHEMA", "ddl": None}
    source = value["source"]
    assert (source["connector"], source["snapshot"], source["schema"], source["table"], source["change_lsn"],
            source["db"]) == ("db2", "true", "MYSCHEMA", "CUSTOMERS", None, "mydatabase")
    assert source["commit_lsn"] == snapshot.value["source"]["commit_lsn"]
    [change] = value["tableChanges"]
    assert (change["type"], change["id"]) == ("CREATE", '"MYSCHEMA"."CUSTOMERS"')
    table = change["table"]
    assert table["defaultCharsetName"] is None and table["primaryKeyColumnNames"] == ["ID"]
    common = {"nativeType": None, "charsetName": None, "autoIncremented": False, "generated": False, "comment": None,
              "defaultValueExpression": None, "enumValues": None}
    # Type names, lengths and scales as IBM's JDBC driver reports them (getColumns: TYPE_NAME, COLUMN_SIZE,
    # DECIMAL_DIGITS), which Debezium 2.7.4's readTableColumn records (Db2ConnectorIT.
    # shouldPropagateSourceTypeByDatatype: VARCHAR(128) is VARCHAR/128); the chapter's printout copies SQL
    # Server's ("int identity", lower case). INTEGER is 10 digits, scale 0.
    assert table["columns"] == [
        {"name": "ID", "jdbcType": 4, "typeName": "INTEGER", "typeExpression": "INTEGER", "length": 10, "scale": 0,
         "position": 1, "optional": False, **common},
        *[{"name": n, "jdbcType": 12, "typeName": "VARCHAR", "typeExpression": "VARCHAR", "length": 255,
           "scale": None, "position": i, "optional": False, **common}
          for i, n in enumerate(["FIRST_NAME", "LAST_NAME", "EMAIL"], 2)]]
