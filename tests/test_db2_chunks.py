"""Db2's snapshot chunks capability (what cdc-spark reads in parallel), on the stand-in, without Spark."""

from __future__ import annotations

import threading
import time

from cdc_core.config import Config
from cdc_core.spi.chunks import snapshot_chunks_for
from cdc_db2.connector import Db2Connector
from cdc_db2.standin.testing import inventory, standin  # noqa: F401  (fixtures)


def test_chunks_cover_every_row_once_and_writers_wait_until_close(inventory):
    inventory.execute('INSERT INTO "MYSCHEMA"."CUSTOMERS" ("FIRST_NAME", "LAST_NAME", "EMAIL") '
                      "SELECT 'f' || g, 'l', 'e' || g || '@x' FROM generate_series(1, 96) g")
    inventory.wait_captured()
    cls = snapshot_chunks_for(Db2Connector)
    assert cls is not None and cls.__name__ == "Db2SnapshotChunks"
    config = Config(inventory.properties())
    capability = cls(config, None)
    assert capability.needs_snapshot(None) and not capability.needs_snapshot({"commit_lsn": "x"})
    plan = capability.open(for_streaming=True, tables=None, chunk_rows=30)
    written = threading.Event()

    def writer():
        inventory.execute('UPDATE "MYSCHEMA"."CUSTOMERS" SET "LAST_NAME" = \'late\' WHERE "ID" = 1001')
        written.set()

    thread = threading.Thread(target=writer)
    try:
        assert [c.index for c in plan.chunks] == [0, 1, 2, 3] and plan.resume_offset["snapshot_completed"] is True
        thread.start()
        rows = [change for chunk in reversed(plan.chunks) for batch in cls.read_chunk(config, chunk)
                for change in batch]
        time.sleep(0.3)
        assert not written.is_set()  # the SHARE locks hold writers back until close
    finally:
        capability.close()
    thread.join(10)
    assert written.is_set()
    ids = sorted(r.after[0] for r in rows)
    assert ids == list(range(1001, 1101))
    assert {r.after[2] for r in rows} == {"l", "Thomas", "Bailey", "Walker", "Kretchmar"}
    markers = [r.source["snapshot"] for r in rows]
    assert markers.count("first") == 1 and markers.count("last") == 1
    assert all(r.source["commit_lsn"] == plan.resume_offset["commit_lsn"] for r in rows)
