"""``incremental.snapshot.allow.schema.changes``: a column added during an incremental snapshot.

Debezium (AbstractIncrementalSnapshotChangeEventSource) checks the table's shape at each chunk: when
it changed, the chunk is dropped, the window closes empty and the next window reads it again, once
the stream has applied the DDL. So the rows read after the ALTER carry the new column, every row is
read, and the snapshot completes.
"""

from __future__ import annotations

from mariadb_cdc import EngineThread, connector_config

ROWS = 20000


def test_rows_read_after_an_added_column_carry_it(mariadb_server, mariadb_db):
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
        mariadb_server.execute("ALTER TABLE items ADD COLUMN extra INT NOT NULL DEFAULT 7", database=mariadb_db)
        engine.wait(lambda rs: any(n.type == "COMPLETED" for n in notes), "the incremental snapshot", 90)
    finally:
        engine.stop()
    rows = reads(engine.records)
    assert sorted(r["after"]["id"] for r in rows) == list(range(1, ROWS + 1))  # each row once
    with_column = [i for i, r in enumerate(rows) if "extra" in r["after"]]
    assert with_column, "no row read after the ALTER has the new column"
    # Once the new shape appears, every later read has it (with its value), up to the last row.
    assert with_column == list(range(with_column[0], len(rows))), "reads of the old shape after the new one"
    assert all(rows[i]["after"]["extra"] == 7 for i in with_column)
    assert with_column[0] < len(rows) - 1000, "the ALTER came too late to test anything"
