"""The Db2 signal table as Debezium 2.7.4's table filter treats it: captured whatever the include list says.

RelationalTableFilters adds ``signal.data.collection`` to the data collection filter, so the signal table gets its
CREATE at the snapshot and its rows streamed from its CD table are change events on its topic (the signal and, for
incremental snapshots, the watermarks), while RelationalSnapshotChangeEventSource.determineSnapshotSelect gives it
no SELECT: the rows it holds at the snapshot are never read.
"""

from __future__ import annotations

import json

from kit.engine import EngineThread

from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_db2.standin.testing import inventory, standin  # noqa: F401  (fixtures)

SIGNAL = [("ID", "VARCHAR(42) NOT NULL"), ("TYPE", "VARCHAR(32) NOT NULL"), ("DATA", "VARCHAR(2048)")]
SIGNAL_TOPIC = "mydatabase.MYSCHEMA.DEBEZIUM_SIGNAL"


def test_signal_rows_are_events_on_its_topic_but_never_snapshotted(inventory):
    inventory.create_table("MYSCHEMA", "DEBEZIUM_SIGNAL", SIGNAL, key=["ID"])
    inventory.add_table("MYSCHEMA", "DEBEZIUM_SIGNAL")
    inventory.execute('INSERT INTO "MYSCHEMA"."DEBEZIUM_SIGNAL" VALUES (%s, %s, %s)',
                      ("old", "log", json.dumps({"message": "before the snapshot"})))
    inventory.wait_captured()  # in the CD table before the snapshot's position: not a change after it
    config = inventory.properties(**{"signal.data.collection": "MYSCHEMA.DEBEZIUM_SIGNAL", "snapshot.mode": "initial",
                                     "table.include.list": "MYSCHEMA.CUSTOMERS", "poll.interval.ms": 50})
    runner = EngineThread(config, offsets=MemoryOffsetStore())
    runner.start()
    try:
        runner.wait_streaming()
        inventory.execute('INSERT INTO "MYSCHEMA"."DEBEZIUM_SIGNAL" VALUES (%s, %s, %s)',
                          ("s-1", "log", json.dumps({"message": "hello"})))
        runner.wait(lambda rs: any(r.topic == SIGNAL_TOPIC and r.value and r.value.get("op") == "c" for r in rs),
                    "the signal row as an event", 60)
    finally:
        runner.stop()
    signal_records = [r for r in runner.records if r.topic == SIGNAL_TOPIC and r.value]
    assert [(r.value["op"], r.value["after"]["ID"]) for r in signal_records] == [("c", "s-1")]
    creates = [r for r in runner.records if r.topic == "mydatabase" and r.value]
    assert '"MYSCHEMA"."DEBEZIUM_SIGNAL"' in {c.value["tableChanges"][0]["id"] for c in creates}
