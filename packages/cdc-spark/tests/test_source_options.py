"""Bad options fail at load() with the option's name; passwords never reach errors or plans."""

from __future__ import annotations

import pytest


def test_bad_options_fail_at_load_naming_them(spark, pg_props):
    props = {**pg_props, "snapshot.mode": "sometimes", "database.password": "hunter2-secret",
             "maxEventsPerTrigger": "0"}
    for reader in (spark.read, spark.readStream):
        with pytest.raises(Exception) as info:
            reader.format("cdc").options(**props).load()
        message = str(info.value)
        assert "snapshot.mode" in message and "maxEventsPerTrigger" in message
        assert "hunter2-secret" not in message


def test_missing_and_unknown_properties(spark, pg_props):
    props = {k: v for k, v in pg_props.items() if k != "database.dbname"}
    with pytest.raises(Exception, match="database.dbname"):
        spark.readStream.format("cdc").options(**props, **{"database.hostnam": "x"}).load()
    with pytest.raises(Exception, match="connector.class"):
        spark.read.format("cdc").option("database.dbname", "x").load()


def test_connector_class_spelling_and_case(spark, pg_props, pg_server, pg_db):
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname=pg_db)
    props = {k: v for k, v in pg_props.items() if k != "connector"}
    props["connector.class"] = "io.debezium.connector.postgresql.PostgresConnector"
    props["database.tcpKeepAlive"] = "true"  # Spark lower-cases option names; cdc restores them
    assert spark.read.format("cdc").options(**props).load().count() == 0


def test_password_is_not_in_the_plan(spark, pg_props, pg_server, pg_db):
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname=pg_db)
    df = spark.readStream.format("cdc").options(**pg_props, **{"database.password": "hunter2-secret"}).load()
    assert "hunter2-secret" not in df._jdf.queryExecution().toString()
