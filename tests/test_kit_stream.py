"""Kit scenarios 1 and 2, for every connector: snapshot then stream equals the table; the handoff under writers.

Each runs ``cdc run`` as a user does (file sink, file offsets) and replays the events of the kit's
workload table (``kit.replay``): the replayed table must be exactly the table, with no change lost,
none applied twice, no key going back in time.
"""

from __future__ import annotations

from kit import ITEMS, Column, Workdir, Writer, payload, start_cdc, wait_replayed


def test_snapshot_then_stream_equals_the_table(connector, tmp_path):
    """Seeded rows (large values among them) snapshotted, then the seeded workload streamed: replay == table."""
    connector.create_table(ITEMS)
    writer = Writer(connector, seed=1)
    writer.seed_rows(300)
    work = Workdir(tmp_path)
    cdc = start_cdc(connector, work, **{"max.batch.size": 100})
    try:
        wait_replayed(cdc, connector, ITEMS)  # the snapshot alone
        writer.run(150)  # inserts, updates, deletes, key changes, multi-row transactions, large values
        table = connector.add_column(ITEMS, Column("extra", "int64"))
        writer.table = table
        writer.run(50)
        result = wait_replayed(cdc, connector, table)
    finally:
        assert cdc.terminate() == 0, cdc.log()
    assert result.snapshots == 1 and result.duplicates == 0 and result.reread == 0, result
    assert result.problems == []
    assert "Traceback" not in cdc.log()


def test_handoff_under_concurrent_writers_loses_and_repeats_nothing(connector, tmp_path):
    """Writers busy through the snapshot and the switch to streaming: each change exactly once."""
    connector.create_table(ITEMS)
    writer = Writer(connector, seed=2)
    writer.seed_rows(3000)
    writer.start(pause=0.0)
    work = Workdir(tmp_path)
    cdc = start_cdc(connector, work, **{"max.batch.size": 64})
    try:
        cdc.wait_until(lambda: work.offsets.exists(), 60, "the snapshot to complete")
        writer_during = writer.transactions
        cdc.wait_until(lambda: writer.transactions > writer_during + 50, 60, "50 more transactions")
        writer.stop()
        result = wait_replayed(cdc, connector, ITEMS, 90)
    finally:
        writer._stop.set()
        assert cdc.terminate() == 0, cdc.log()
    assert result.snapshots == 1
    assert (result.duplicates, result.reread, result.problems) == (0, 0, [])
    reads = [payload(e["value"]) for e in cdc.events(connector.topic(ITEMS))
             if e["value"] is not None and payload(e["value"])["op"] == "r"]
    assert len(reads) >= 3000 and all(r["source"]["snapshot"] != "false" for r in reads)
    marks = [r["source"]["snapshot"] for r in reads]
    assert marks[0] == "first" and marks[-1] == "last" and set(marks[1:-1]) == {"true"}
    assert len({connector.source_position(r["source"]) for r in reads}) == 1, "the snapshot's reads name one position"
