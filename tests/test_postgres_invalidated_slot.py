"""A slot invalidated by max_slot_wal_keep_size: a clear error, or a new snapshot under when_needed."""

from __future__ import annotations

from cdc_postgres.embedded import EmbeddedPostgres

from cdc_process import CdcProcess, server_properties, write_properties

TOPIC = "dbserver1.public.t"


def test_invalidated_slot(tmp_path):
    with EmbeddedPostgres(settings={"max_slot_wal_keep_size": "1MB", "wal_keep_size": "0", "max_wal_size": "32MB",
                                    "min_wal_size": "32MB"}) as pg:
        pg.create_database("app")
        pg.execute("CREATE TABLE t (id int PRIMARY KEY, pad text); INSERT INTO t VALUES (1, 'a')", dbname="app")
        config = write_properties(tmp_path / "app.properties", server_properties(pg, "app", tmp_path))
        cdc = CdcProcess(config, tmp_path).start()
        cdc.wait_events(TOPIC, 1)
        assert cdc.terminate() == 0
        for _ in range(4):  # write and recycle WAL well past the slot's 1 MB allowance
            pg.execute("INSERT INTO t SELECT g, repeat('x', 500) FROM generate_series(2, 20000) g "
                       "ON CONFLICT (id) DO UPDATE SET pad = excluded.pad", dbname="app")
            pg.execute("SELECT pg_switch_wal()")
            pg.execute("CHECKPOINT")
        status = pg.execute("SELECT wal_status FROM pg_replication_slots WHERE slot_name = 'debezium'", dbname="app")
        assert status == [("lost",)], status
        cdc = CdcProcess(config, tmp_path).start()
        assert cdc.wait_exit(60) == 1
        assert "was invalidated" in cdc.log() and "when_needed" in cdc.log()
        props = server_properties(pg, "app", tmp_path, **{"snapshot.mode": "when_needed"})
        cdc = CdcProcess(write_properties(tmp_path / "app.properties", props), tmp_path).start()
        try:
            cdc.wait_until(lambda: len(cdc.events(TOPIC)) >= 1 + 20000, 60, "a new snapshot")
        finally:
            assert cdc.terminate() == 0
    ops = [e["value"]["payload"]["op"] for e in cdc.events(TOPIC) if e["value"]]
    assert ops.count("r") == 1 + 20000
