"""GTID-based failover: a restart against a promoted replica positions itself from the stored GTID set.

Two throwaway MariaDB servers replicate with GTIDs (the replica logs what it applies, in the same GTID
domain, under other binlog file names and positions). cdc streams from the primary; the primary dies,
the replica is promoted, and cdc restarted against the replica continues exactly where it stopped:
Debezium positions the binlog reader from the offset's ``gtids`` whenever the server uses GTIDs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from cdc_mysql.embedded import EmbeddedMariaDB
from cdc_process import CdcProcess, write_properties
from mariadb_cdc import mariadb_properties


@pytest.fixture
def topology() -> Iterator[tuple[EmbeddedMariaDB, EmbeddedMariaDB]]:
    """A primary and a replica replicating from it by GTID (``MASTER_USE_GTID=slave_pos``)."""
    primary = EmbeddedMariaDB({"server-id": "1"})
    replica = EmbeddedMariaDB({"server-id": "2", "log-bin": "replica-bin", "log-slave-updates": "ON"})
    try:
        primary.start()
        replica.start()
        # The replica's binlog positions are its own: other file names, other numbers, other offsets.
        replica.execute(["FLUSH BINARY LOGS", "FLUSH BINARY LOGS"])
        replica.execute([f"CHANGE MASTER TO MASTER_HOST='{primary.host}', MASTER_PORT={primary.port}, "
                         "MASTER_USER='root', MASTER_PASSWORD='', MASTER_USE_GTID=slave_pos", "START SLAVE"])
        yield primary, replica
    finally:
        for server in (replica, primary):
            server.stop()


def _caught_up(primary: EmbeddedMariaDB, replica: EmbeddedMariaDB) -> None:
    """Wait until the replica applied everything the primary has written."""
    (pos,), = primary.execute("SELECT @@global.gtid_binlog_pos")
    (result,), = replica.execute(f"SELECT MASTER_GTID_WAIT('{pos}', 30)")
    assert result == 0, f"the replica did not reach {pos}"


def test_restart_against_the_promoted_replica_loses_and_repeats_nothing(topology, tmp_path):
    primary, replica = topology
    primary.execute(["CREATE DATABASE shop", "CREATE TABLE shop.orders (id INT PRIMARY KEY, qty INT)",
                     "INSERT INTO shop.orders VALUES (1, 10)"])
    props = mariadb_properties(primary, "shop", tmp_path, **{"table.include.list": "shop.orders"})
    topic = "dbserver1.shop.orders"
    cdc = CdcProcess(write_properties(tmp_path / "app.properties", props), tmp_path).start()
    cdc.wait_events(topic, 1, timeout=60)
    primary.execute(["INSERT INTO shop.orders VALUES (2, 20)", "UPDATE shop.orders SET qty = 11 WHERE id = 1"],
                    database="shop")
    cdc.wait_events(topic, 3)
    assert cdc.terminate() == 0, cdc.log()
    offset = json.loads((tmp_path / "offsets.json").read_text())["offsets"][0]["offset"]
    assert offset.get("gtids"), offset

    # Changes cdc has not read yet reach the replica; then the primary dies and the replica takes over.
    primary.execute(["INSERT INTO shop.orders VALUES (3, 30)", "DELETE FROM shop.orders WHERE id = 2"], database="shop")
    _caught_up(primary, replica)
    primary.kill()
    replica.execute(["STOP SLAVE", "RESET SLAVE ALL"])
    replica.execute(["INSERT INTO shop.orders VALUES (4, 40)", "UPDATE shop.orders SET qty = 31 WHERE id = 3"],
                    database="shop")
    files = [row[0] for row in replica.execute("SHOW BINARY LOGS")]
    assert offset["file"] not in files, (offset, files)  # only the GTID set can place the restart

    props = {**props, "debezium.source.database.port": replica.port}
    cdc = CdcProcess(write_properties(tmp_path / "app.properties", props), tmp_path).start()
    events = cdc.wait_events(topic, 8)
    assert cdc.terminate() == 0, cdc.log()
    values = [e["value"]["payload"] for e in cdc.events(topic) if e.get("value")]
    got = [(v["op"], (v["after"] or v["before"])["id"], (v["after"] or {}).get("qty")) for v in values]
    assert got == [("r", 1, 10), ("c", 2, 20), ("u", 1, 11),
                   ("c", 3, 30), ("d", 2, None), ("c", 4, 40), ("u", 3, 31)], got
