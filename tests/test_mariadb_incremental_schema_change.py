"""``incremental.snapshot.allow.schema.changes``: a column added or dropped during an incremental snapshot.

Debezium (AbstractIncrementalSnapshotChangeEventSource) checks the table's shape at each chunk: when
it changed, the chunk is dropped, the window closes empty and the next window reads it again, once
the stream has applied the DDL. So the rows read after the ALTER have the new shape, every row is
read, and the snapshot completes.
"""

from __future__ import annotations

import pytest

from mariadb_cdc import EngineThread, connector_config

ROWS = 20000


@pytest.mark.parametrize(("alter", "changed"), [
    ("ADD COLUMN extra INT NOT NULL DEFAULT 7", lambda after: after.get("extra") == 7),
    ("DROP COLUMN v", lambda after: "v" not in after),  # the old column list would make the SELECT fail
], ids=["add", "drop"])
def test_rows_read_after_an_alter_have_the_new_shape(mariadb_server, mariadb_db, alter, changed):
    mariadb_server.execute([
        "CREATE TABLE debezium_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))",
        "CREATE TABLE items (id INT PRIMARY KEY, v INT NOT NULL)",
        f"INSERT INTO items SELECT seq, seq FROM seq_1_to_{ROWS}",
    ], database=mariadb_db)
    config = connector_config(mariadb_server, mariadb_db, **{
        "snapshot.mode": "no_data", "signal.data.collection": f"{mariadb_db}.debezium_signal",
        "table.include.list": f"{mariadb_db}.items", "incremental.snapshot.chunk.size": 100,
        "incremental.snapshot.allow.schema.changes": "true", "topic.prefix": "inc"})
    engine = EngineThread(config)
    notes: list = []
    engine.engine.add_notification_listener(notes.append)
    topic = f"inc.{mariadb_db}.items"

    def reads(records) -> list:
        return [r.value for r in records if r.topic == topic and r.value and r.value["op"] == "r"]

    engine.start()
    try:
        engine.wait(lambda rs: engine.engine.metrics.streaming.connected, "streaming")
        mariadb_server.execute("INSERT INTO debezium_signal VALUES ('s-1', 'execute-snapshot', "
                               f"'{{\"data-collections\": [\"{mariadb_db}.items\"]}}')", database=mariadb_db)
        engine.wait(lambda rs: len(reads(rs)) >= 300, "the first chunks")
        mariadb_server.execute(f"ALTER TABLE items {alter}", database=mariadb_db)
        engine.wait(lambda rs: any(n.type == "COMPLETED" and n.aggregate_type == "Incremental Snapshot" for n in notes), "the incremental snapshot", 90)
    finally:
        engine.stop()
    rows = reads(engine.records)
    assert sorted(r["after"]["id"] for r in rows) == list(range(1, ROWS + 1))  # each row once
    new_shape = [i for i, r in enumerate(rows) if changed(r["after"])]
    assert new_shape, "no row read after the ALTER has the new shape"
    # Once the new shape appears, every later read has it, up to the last row.
    assert new_shape == list(range(new_shape[0], len(rows))), "reads of the old shape after the new one"
    assert new_shape[0] < len(rows) - 1000, "the ALTER came too late to test anything"
