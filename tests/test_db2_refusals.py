"""What the Db2 connector refuses at start, on the stand-in: one clear line each, never the password."""

from __future__ import annotations

import logging
import time
import uuid

import pytest
from change_table_tests import SECRET, start_error
from kit.engine import run_until

from cdc_core.engine import Engine
from cdc_core.errors import ConfigError, ConnectorError
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_db2 import driver
from cdc_db2.standin import dbapi
from cdc_db2.standin.testing import CUSTOMERS, inventory, standin, zos_inventory, zos_standin  # noqa: F401  (fixtures)


def _start_error(config) -> str:
    """The one-line error at start, without retrying."""
    return start_error({"errors.max.retries": 0, **config})


def test_unknown_user_is_refused_without_the_password(inventory):
    message = _start_error({**inventory.properties(), "database.user": "nobody", "database.password": SECRET})
    assert "refused the connection of user 'nobody'" in message and "SQL30082N" in message
    assert "database.password" in message


def test_unknown_database_is_refused(inventory):
    message = _start_error({**inventory.properties(), "database.dbname": "NOSUCHDB", "database.password": SECRET})
    assert "SQL1013N" in message and "NOSUCHDB" in message and "database.dbname" in message


def test_a_database_without_the_asn_control_tables_is_refused(pg_server, pg_db):
    saved = driver.CONNECT
    dbapi.install()
    try:
        message = _start_error({"connector.class": "db2", "database.hostname": pg_server.host,
                                "database.port": pg_server.port, "database.user": pg_server.user,
                                "database.password": SECRET, "database.dbname": pg_db, "topic.prefix": "p"})
    finally:
        driver.install(saved)
    assert "ASNCDC.IBMSNAP_REGISTER does not exist" in message and "cdc.control.schema" in message


def test_no_table_in_capture_mode_is_a_warning_naming_addtable_then_the_table_streams_once_added(standin, caplog):
    """As Debezium 2.7.4 (Db2ConnectorIT.testEmptySchemaWarningAfterApplyingFilters): the connector runs and warns;
    the snapshot reads the table (included, not in capture mode); once ADDTABLE'd its changes stream."""
    standin.create_table("MYSCHEMA", "CUSTOMERS", CUSTOMERS, key=["ID"])
    standin.execute('INSERT INTO "MYSCHEMA"."CUSTOMERS" ("FIRST_NAME", "LAST_NAME", "EMAIL") VALUES (\'a\', \'b\', \'c\')')
    standin.agent.start()

    def register_then_insert():
        standin.add_table("MYSCHEMA", "CUSTOMERS")
        time.sleep(0.5)
        standin.execute('INSERT INTO "MYSCHEMA"."CUSTOMERS" ("FIRST_NAME", "LAST_NAME", "EMAIL") '
                        "VALUES ('d', 'e', 'f')")

    with caplog.at_level(logging.WARNING):
        records = run_until(standin.properties(), lambda rs: len([r for r in rs if r.topic.endswith("CUSTOMERS")]) >= 2,
                            "the snapshot row and the insert", action=register_then_insert).records
    message = next(r.getMessage() for r in caplog.records if "no changes will be captured" in r.getMessage())
    assert "CALL ASNCDC.ADDTABLE" in message and "reinit" in message
    ops = [(r.value["op"], r.value["after"]["EMAIL"]) for r in records if r.topic.endswith("CUSTOMERS")]
    assert ops == [("r", "c"), ("c", "f")]


def test_an_inactive_table_is_named_in_a_warning_and_not_streamed(inventory, caplog):
    """The connector runs (as Debezium), warns, snapshots the table (the filters include it) and streams nothing."""
    inventory.set_state("MYSCHEMA", "CUSTOMERS", "I")
    with caplog.at_level(logging.WARNING):
        records = run_until(inventory.properties(), lambda rs: len([r for r in rs if r.topic.endswith("CUSTOMERS")]) >= 4,
                            "the snapshot", action=lambda: inventory.execute(
                                'UPDATE "MYSCHEMA"."CUSTOMERS" SET "LAST_NAME" = \'x\''), settle=0.5).records
    messages = [r.getMessage() for r in caplog.records]
    assert any("registered tables matching the filters: MYSCHEMA.CUSTOMERS" in m for m in messages), messages
    assert any("MYSCHEMA.CUSTOMERS is registered" in m and "INACTIVE" in m for m in messages), messages
    assert [r.value["op"] for r in records if r.topic.endswith("CUSTOMERS")] == ["r"] * 4


def test_a_user_who_cannot_read_the_change_data_table_is_refused(inventory):
    user = "cdc_" + uuid.uuid4().hex[:8]
    inventory.execute(f"CREATE ROLE {user} LOGIN PASSWORD '{SECRET}'")
    try:
        inventory.execute(f'GRANT USAGE ON SCHEMA asncdc, "MYSCHEMA", "ASNCDC" TO {user}')
        inventory.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA asncdc TO {user}")
        inventory.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "MYSCHEMA" TO {user}')
        message = _start_error({**inventory.properties(), "database.user": user, "database.password": SECRET})
        assert f"user {user!r} cannot read \"ASNCDC\".\"CDC_MYSCHEMA_CUSTOMERS\"" in message
        assert "GRANT SELECT ON" in message and "SQLSTATE=42501" in message
    finally:
        inventory.execute(f"DROP OWNED BY {user}")
        inventory.execute(f"DROP ROLE {user}")


@pytest.mark.parametrize("change,expected", [
    ({"database.dbname": None}, "database.dbname"),
    ({"snapshot.isolation.mode": "snapshot"}, "snapshot.isolation.mode"),
    ({"db2.platform": "ISERIES"}, "db2.platform"),
])
def test_bad_configuration_names_the_property(change, expected):
    config = {"connector.class": "io.debezium.connector.db2.Db2Connector", "database.hostname": "db.example",
              "database.user": "u", "database.password": SECRET, "database.dbname": "SAMPLE", "topic.prefix": "p"}
    config = {k: v for k, v in {**config, **change}.items() if v is not None}
    with pytest.raises(ConfigError) as info:
        Engine(config, offset_store=MemoryOffsetStore())
    assert expected in str(info.value) and SECRET not in str(info.value)


def test_database_query_timeout_cancels_a_long_statement(inventory):
    from cdc_core.config import Config
    from cdc_db2.errors import sqlstate

    conn = driver.connect(Config({**inventory.properties(), "database.query.timeout.ms": 500}))
    try:
        with pytest.raises(Exception) as info:
            conn.cursor().execute("SELECT pg_sleep(3) FROM SYSIBM.SYSDUMMY1")
        assert sqlstate(info.value) == "57014" and "SQL0952N" in str(info.value)
    finally:
        conn.close()


def test_zos_with_six_byte_lsns_is_refused(zos_inventory):
    """The chapter: Debezium cannot be used with Db2 for z/OS versions that use 6-byte LSNs (10-byte synchpoints)."""
    zos_inventory.execute("UPDATE asncdc.ibmsnap_register SET synchpoint = %s", (b"\xff" * 10,))
    with pytest.raises(ConnectorError, match="10-byte synchpoints.*6-byte RBA/LRSN"):
        Engine(zos_inventory.properties(**{"db2.platform": "ZOS"}), offset_store=MemoryOffsetStore()).run(lambda rs: None)


def test_an_luw_connector_on_a_zos_catalog_names_the_missing_catalog_object(zos_inventory):
    """db2.platform left at LUW against z/OS: the start-up refusal names SYSCAT, which z/OS lacks."""
    with pytest.raises(ConnectorError, match="SYSCAT.COLUMNS, SYSCAT.TABLES"):
        Engine(zos_inventory.properties(), offset_store=MemoryOffsetStore()).run(lambda rs: None)
    # LUW does not look at it (its synchpoints are 16 bytes; the chapter's refusal is z/OS's).
