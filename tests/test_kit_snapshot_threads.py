"""Kit scenario, for every connector: ``snapshot.max.threads`` reads several tables at once, and the hand-over stays exact.

The workers share the snapshot's consistent view (PostgreSQL: the slot's exported snapshot, imported
with ``SET TRANSACTION SNAPSHOT``; MariaDB: consistent snapshots started under the global read
lock), so what writers commit while the snapshot runs comes exactly once: read, or streamed.
Markers are Debezium's for more than one thread: ``first_in_data_collection`` /
``last_in_data_collection`` per table, no ``first``, and ``last`` on the snapshot's final record.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kit import ITEMS, Workdir, Writer, read_rows, replay
from kit.engine import EngineThread

#: Rows per table before the snapshot; the writers change the first two while it runs.
SIZES = {"kit_par1": 8000, "kit_par2": 6000, "kit_par3": 6000, "kit_par4": 1000}
WRITTEN = ("kit_par1", "kit_par2")


def _engine_config(connector: Any, work: Workdir, **source: Any) -> dict[str, Any]:
    """The connector's ``cdc run`` source properties, for the engine as a library runs it."""
    prefix = "debezium.source."
    props = connector.properties(work, **source)
    return {k[len(prefix):]: v for k, v in props.items() if k.startswith(prefix) and "offset.storage" not in k}


def test_tables_read_in_parallel_each_change_once(connector, tmp_path):
    tables = {name: replace(ITEMS, name=name) for name in SIZES}
    writers = {}
    for i, (name, table) in enumerate(tables.items()):
        connector.create_table(table)
        writers[name] = Writer(connector, table, seed=10 + i, large=2000)
        writers[name].seed_rows(SIZES[name], chunk=2000)
    config = _engine_config(connector, Workdir(tmp_path), **{"snapshot.max.threads": 3, "snapshot.fetch.size": 200,
                                                            "max.batch.size": 256})
    engine = EngineThread(config).start()
    try:
        for name in WRITTEN:
            writers[name].start(pause=0.002)
        engine.wait(lambda rs: engine.engine.metrics.streaming.connected, "streaming", 120)
        for name in WRITTEN:
            writers[name].stop()
        topics = {name: connector.topic(table) for name, table in tables.items()}
        for name, table in tables.items():
            rows = read_rows(connector, table)
            engine.wait(lambda rs, t=topics[name], n=name: _replayed(connector, rs, t, tables[n]).state == rows,
                        f"{name} replayed to the table", 60)
    finally:
        for w in writers.values():
            w._stop.set()
        engine.stop()
    records = engine.snapshot()
    ours = set(topics.values())
    reads = [r for r in records if r.topic in ours and r.value is not None and r.value["op"] == "r"]
    for name in SIZES:
        result = _replayed(connector, records, topics[name], tables[name])
        assert (result.duplicates, result.reread, result.snapshots) == (0, 0, 1), (name, result.problems[:5])
        marks = [r.value["source"]["snapshot"] for r in reads if r.topic == topics[name]]
        assert marks[0] == "first_in_data_collection" and set(marks[1:-1]) <= {"true"}, (name, marks[:3])
        assert marks[-1] in ("last_in_data_collection", "last"), (name, marks[-3:])
    assert [r.value["source"]["snapshot"] for r in reads].count("last") == 1
    assert reads[-1].value["source"]["snapshot"] == "last"
    assert sum(w.transactions for n, w in writers.items() if n in WRITTEN) > 0, "no write during the snapshot"
    switches = sum(1 for a, b in zip(reads, reads[1:]) if a.topic != b.topic)
    assert switches > len(SIZES), f"the tables were read one after another ({switches} switches)"


def _replayed(connector: Any, records: list, topic: str, table: Any):
    """Replay one topic's records as a consumer keeping the table would."""
    return replay([{"key": r.key, "value": r.value} for r in records if r.topic == topic], table.key,
                  unavailable=connector.unavailable_value)
