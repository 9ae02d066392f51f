"""Signals on the Db2 connector (stand-in): an incremental snapshot through the signal table, in capture mode."""

from __future__ import annotations

import json

import pytest
from kit.engine import run_until

from cdc_db2.standin.testing import inventory, standin  # noqa: F401  (fixtures)

SIGNAL = [("ID", "VARCHAR(42) NOT NULL"), ("TYPE", "VARCHAR(32) NOT NULL"), ("DATA", "VARCHAR(2048)")]


@pytest.mark.parametrize("kind", ["incremental", "blocking"])
def test_an_execute_snapshot_signal_reads_the_table_again(inventory, kind):
    inventory.create_table("MYSCHEMA", "DEBEZIUM_SIGNAL", SIGNAL, key=["ID"])
    inventory.add_table("MYSCHEMA", "DEBEZIUM_SIGNAL")
    config = inventory.properties(**{"signal.data.collection": "MYSCHEMA.DEBEZIUM_SIGNAL",
                                     "table.include.list": "MYSCHEMA.CUSTOMERS", "snapshot.mode": "no_data",
                                     "incremental.snapshot.chunk.size": 3})
    data = json.dumps({"data-collections": ["MYSCHEMA.CUSTOMERS"], "type": kind})
    records = run_until(
        config, lambda rs: len([r for r in rs if r.topic == "mydatabase.MYSCHEMA.CUSTOMERS"]) >= 4,
        "the 4 rows read again", action=lambda: inventory.execute(
            'INSERT INTO "MYSCHEMA"."DEBEZIUM_SIGNAL" VALUES (%s, %s, %s)', ("ad-hoc-1", "execute-snapshot", data)),
    ).records
    reads = [r.value for r in records if r.topic == "mydatabase.MYSCHEMA.CUSTOMERS"]
    assert [v["after"]["ID"] for v in reads] == [1001, 1002, 1003, 1004] and {v["op"] for v in reads} == {"r"}
    if kind == "incremental":
        assert {v["source"]["snapshot"] for v in reads} == {"incremental"}
    assert not [r for r in records if r.topic.endswith("DEBEZIUM_SIGNAL") and r.value and r.value["op"] == "r"]
