"""An offsets file ahead of the server's binlog (copied from elsewhere, hand-edited) stops the start clearly."""

from __future__ import annotations

import json

import pytest

from cdc_process import CdcProcess, write_properties
from mariadb_cdc import mariadb_properties


@pytest.mark.parametrize("ahead", ["position", "file", "gtids"])
def test_offset_beyond_the_servers_binlog_is_refused_and_nothing_is_skipped(mariadb_server, mariadb_db, tmp_path, ahead):
    topic = f"dbserver1.{mariadb_db}.fut"
    mariadb_server.execute("CREATE TABLE fut (id int PRIMARY KEY)", database=mariadb_db)
    mariadb_server.execute("INSERT INTO fut VALUES (1)", database=mariadb_db)
    props = mariadb_properties(mariadb_server, mariadb_db, tmp_path, **{"table.include.list": f"{mariadb_db}.fut"})
    config = write_properties(tmp_path / "app.properties", props)
    cdc = CdcProcess(config, tmp_path).start()
    cdc.wait_events(topic, 1)
    assert cdc.terminate() == 0, cdc.log()

    offsets = tmp_path / "offsets.json"
    good = offsets.read_text()
    doc = json.loads(good)
    offset = doc["offsets"][0]["offset"]
    if ahead == "gtids":  # positioned by GTIDs (as Debezium does whenever the offset has them)
        domain, server, seq = offset["gtids"].split("-")
        offset["gtids"] = f"{domain}-{server}-{int(seq) + 1000}"
        where = f"GTID set {offset['gtids']}"
    else:  # positioned by file/pos: an offset without GTIDs
        del offset["gtids"]
        where = None
    if ahead == "position":
        offset["pos"] = offset["pos"] + (1 << 30)
    elif ahead == "file":
        base, number = offset["file"].rsplit(".", 1)
        offset["file"] = f"{base}.{int(number) + 1000:0{len(number)}d}"
    offsets.write_text(json.dumps(doc))
    tampered = offsets.read_text()

    mariadb_server.execute("INSERT INTO fut VALUES (2)", database=mariadb_db)
    cdc = CdcProcess(config, tmp_path).start()
    assert cdc.wait_exit(60) == 1, cdc.log()
    log = cdc.log()
    assert "Traceback" not in log, log
    assert str(offsets) in log and "ahead of" in log and (where or f"{offset['file']}:{offset['pos']}") in log, log
    assert offsets.read_text() == tampered, "the offsets file was rewritten"

    offsets.write_text(good)
    cdc = CdcProcess(config, tmp_path).start()
    events = cdc.wait_events(topic, 2)
    assert cdc.terminate() == 0
    assert [e["key"]["payload"]["id"] for e in events] == [1, 2], events
