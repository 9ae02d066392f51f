"""An offsets file ahead of the server's WAL (copied from elsewhere, hand-edited) stops the start clearly."""

from __future__ import annotations

import json

from cdc_process import CdcProcess, server_properties, write_properties

TOPIC = "dbserver1.public.fut"


def _slot_confirmed(pg, db: str) -> tuple[int, int]:
    rows = pg.execute("SELECT (confirmed_flush_lsn - '0/0')::bigint, (pg_current_wal_lsn() - '0/0')::bigint "
                     "FROM pg_replication_slots WHERE slot_name = 'fut_slot'", dbname=db)
    return rows[0]


def test_offset_beyond_the_servers_wal_is_refused_and_nothing_is_skipped(pg_server, pg_db, tmp_path):
    pg_server.execute("CREATE TABLE fut (id int PRIMARY KEY)", dbname=pg_db)
    pg_server.execute("INSERT INTO fut VALUES (1)", dbname=pg_db)
    props = server_properties(pg_server, pg_db, tmp_path, **{"slot.name": "fut_slot", "table.include.list": "public.fut"})
    config = write_properties(tmp_path / "app.properties", props)
    cdc = CdcProcess(config, tmp_path).start()
    cdc.wait_events(TOPIC, 1)
    assert cdc.terminate() == 0, cdc.log()

    offsets = tmp_path / "offsets.json"
    good = offsets.read_text()
    doc = json.loads(good)
    offset = doc["offsets"][0]["offset"]
    future = offset["lsn"] + (64 << 30)  # 64 GiB ahead of anything this server has written
    offset.update(lsn=future, lsn_commit=future, lsn_proc=future)
    offsets.write_text(json.dumps(doc))
    tampered = offsets.read_text()
    confirmed_before = _slot_confirmed(pg_server, pg_db)[0]

    pg_server.execute("INSERT INTO fut VALUES (2)", dbname=pg_db)
    cdc = CdcProcess(config, tmp_path).start()
    assert cdc.wait_exit(60) == 1, cdc.log()
    log = cdc.log()
    assert "Traceback" not in log, log
    assert str(offsets) in log and "ahead of" in log, log
    assert f"{future >> 32:X}/{future & 0xFFFFFFFF:X}" in log, log
    assert offsets.read_text() == tampered, "the offsets file was rewritten"
    confirmed, current = _slot_confirmed(pg_server, pg_db)
    assert confirmed <= current and confirmed == confirmed_before, "the slot was confirmed past what was delivered"

    # The right offsets put back: the change made meanwhile is still delivered.
    offsets.write_text(good)
    cdc = CdcProcess(config, tmp_path).start()
    events = cdc.wait_events(TOPIC, 2)
    assert cdc.terminate() == 0
    assert [e["key"]["payload"]["id"] for e in events] == [1, 2], events
