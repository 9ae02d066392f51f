"""The core's features on the Db2 connector (stand-in): transaction metadata, heartbeats, filters, masking."""

from __future__ import annotations

from kit.engine import run_until

from cdc_db2.standin.testing import inventory, standin  # noqa: F401  (fixtures)


def test_transaction_metadata_heartbeats_and_column_filters(inventory):
    inventory.create_table("MYSCHEMA", "ORDERS", [("ID", "INTEGER NOT NULL"), ("QTY", "INTEGER")], key=["ID"])
    inventory.add_table("MYSCHEMA", "ORDERS")
    config = inventory.properties(**{
        "provide.transaction.metadata": "true", "heartbeat.interval.ms": 200,
        "column.exclude.list": "MYSCHEMA.CUSTOMERS.LAST_NAME", "column.mask.with.5.chars": "MYSCHEMA.CUSTOMERS.EMAIL",
        "snapshot.mode": "no_data"})
    runner = run_until(
        config, lambda rs: any(r.topic == "mydatabase.transaction" and r.value["status"] == "END" for r in rs)
        and any(r.topic.startswith("__debezium-heartbeat") for r in rs), "a transaction's END and a heartbeat",
        action=lambda: inventory.execute(
            'BEGIN; INSERT INTO "MYSCHEMA"."CUSTOMERS" ("FIRST_NAME", "LAST_NAME", "EMAIL") '
            "VALUES ('john', 'doe', 'john.doe@example.org'); "
            'INSERT INTO "MYSCHEMA"."ORDERS" VALUES (1, 5); COMMIT; '
            # The END comes with the next transaction's first event, as Debezium 2.7.4's Db2 connector sends it.
            'INSERT INTO "MYSCHEMA"."ORDERS" VALUES (2, 6)'))
    engine, records = runner.engine, runner.records
    # The chapter's MBean names (no task key for Db2), and the streaming counters.
    assert engine.metrics.mbean_name("streaming") == \
        "debezium.db2:type=connector-metrics,context=streaming,server=mydatabase"
    assert engine.metrics.streaming.captured_tables == {"MYSCHEMA.CUSTOMERS", "MYSCHEMA.ORDERS"}
    tx = [r.value for r in records if r.topic == "mydatabase.transaction"]
    assert [t["status"] for t in tx] == ["BEGIN", "END", "BEGIN"]
    data = [r for r in records if r.topic.startswith("mydatabase.MYSCHEMA.")]
    commit = data[0].value["source"]["commit_lsn"]
    assert tx[0]["id"] == tx[1]["id"] == commit and tx[1]["event_count"] == 2
    assert sorted((c["data_collection"], c["event_count"]) for c in tx[1]["data_collections"]) == [
        ("MYSCHEMA.CUSTOMERS", 1), ("MYSCHEMA.ORDERS", 1)]
    assert [r.value["transaction"]["total_order"] for r in data] == [1, 2, 1]
    customer = data[0].value["after"]
    assert customer == {"ID": 1005, "FIRST_NAME": "john", "EMAIL": "*****"}  # LAST_NAME excluded, EMAIL masked
    beat = next(r for r in records if r.topic.startswith("__debezium-heartbeat"))
    assert beat.topic == "__debezium-heartbeat.mydatabase" and beat.key == {"serverName": "mydatabase"}


def test_skipped_operations_and_message_key_columns(inventory):
    config = inventory.properties(**{"skipped.operations": "u,d", "snapshot.mode": "no_data",
                                     "message.key.columns": "MYSCHEMA.CUSTOMERS:EMAIL"})

    def writes():
        inventory.execute('UPDATE "MYSCHEMA"."CUSTOMERS" SET "LAST_NAME" = \'x\' WHERE "ID" = 1001')
        inventory.execute('DELETE FROM "MYSCHEMA"."CUSTOMERS" WHERE "ID" = 1002')
        inventory.execute('INSERT INTO "MYSCHEMA"."CUSTOMERS" ("FIRST_NAME", "LAST_NAME", "EMAIL") '
                          "VALUES ('n', 'd', 'n@d')")

    def data(rs):  # no_data's schema snapshot sends the table's CREATE on topic mydatabase first
        return [r for r in rs if r.topic == "mydatabase.MYSCHEMA.CUSTOMERS"]

    records = run_until(config, data, "the insert", action=writes, settle=0.3).records
    assert [(r.value["op"], r.key) for r in data(records)] == [("c", {"EMAIL": "n@d"})]
