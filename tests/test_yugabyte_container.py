"""The YugabyteDB connector against a real YugabyteDB: testcontainers where a Docker engine runs, or a running cluster.

``CDC_TEST_YUGABYTE=postgresql://user[:password]@host:port/database`` points the tests at an existing
cluster (logical replication on: YugabyteDB 2024.1.1 or newer with the replication commands enabled);
otherwise a ``yugabytedb/yugabyte`` container is started with them enabled. Without either, every test
is skipped, saying why. These are the checks the PostgreSQL stand-in cannot give: yboutput itself,
REPLICA IDENTITY CHANGE, the identity frozen when the slot is created, YugabyteDB's slot command with
its LSN type, and YugabyteDB's own catalog and replication protocol answers.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import psycopg
import pytest

from cdc_core.containers import docker_problem

from yb_run import Running, yb_config

IMAGE = os.environ.get("CDC_YUGABYTE_IMAGE", "yugabytedb/yugabyte:2024.1.1.0-b137")
#: Logical replication is a preview in 2024.1: its flags must be allowed and set (harmless where it is GA).
PREVIEW = "ysql_yb_enable_replication_commands,yb_enable_cdc_consistent_snapshot_streams"
TSERVER_FLAGS = (f"allowed_preview_flags_csv={{{PREVIEW}}},ysql_yb_enable_replication_commands=true,"
                 "yb_enable_cdc_consistent_snapshot_streams=true")
EXPECTED = json.loads((Path(__file__).parents[1] / "packages" / "cdc-yugabyte" / "tests" / "data" /
                       "employee_replica_identity.json").read_text())
EMPLOYEE = "CREATE TABLE employee (employee_id INT PRIMARY KEY, employee_name VARCHAR, employee_dept TEXT)"
TOPIC = "dbserver.public.employee"


class YugabyteServer:
    """Where YugabyteDB's YSQL listens."""

    def __init__(self, host: str, port: int, user: str, password: str, db: str):
        self.host, self.port, self.user, self.password, self.db = host, port, user, password, db

    def execute(self, statement: str, dbname: str | None = None) -> list | None:
        """Run one statement (autocommit); its rows."""
        with psycopg.connect(host=self.host, port=self.port, user=self.user, password=self.password or None,
                             dbname=dbname or self.db, autocommit=True) as conn:
            cur = conn.execute(statement)
            return cur.fetchall() if cur.description else None



@pytest.fixture(scope="session")
def yugabyte() -> Iterator[YugabyteServer]:
    """A YugabyteDB: CDC_TEST_YUGABYTE, else a testcontainers single-node cluster; skipped naming what is missing."""
    url = os.environ.get("CDC_TEST_YUGABYTE")
    if url:
        u = urlparse(url)
        yield YugabyteServer(u.hostname or "127.0.0.1", u.port or 5433, u.username or "yugabyte", u.password or "",
                             (u.path or "/yugabyte").lstrip("/") or "yugabyte")
        return
    problem = docker_problem("CDC_TEST_YUGABYTE", "real-YugabyteDB")
    if problem:
        pytest.skip(problem)
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.waiting_utils import wait_for_logs

    container = (DockerContainer(IMAGE).with_exposed_ports(5433)
                 .with_command(f'bin/yugabyted start --background=false --tserver_flags="{TSERVER_FLAGS}"'))
    with container:
        wait_for_logs(container, "Data placement constraint successfully verified", timeout=180)
        yield YugabyteServer(container.get_container_host_ip(), int(container.get_exposed_port(5433)), "yugabyte",
                             "", "yugabyte")


@pytest.fixture
def yb_db(yugabyte: YugabyteServer) -> Iterator[str]:
    """A fresh database for one test; its slots (slot names are cluster-wide) dropped after."""
    name = f"test_{uuid.uuid4().hex[:12]}"
    yugabyte.execute(f"CREATE DATABASE {name}")
    yield name
    for (slot,) in yugabyte.execute(f"SELECT slot_name FROM pg_replication_slots WHERE database = '{name}'") or []:
        yugabyte.execute(f"SELECT pg_drop_replication_slot('{slot}')")
    yugabyte.execute(f"DROP DATABASE IF EXISTS {name}")


def _run(yb: YugabyteServer, db: str, **extra) -> Running:
    """The connector on ``db`` with its own slot and publication (names are cluster-wide)."""
    config = yb_config(yb.host, yb.port, yb.user, db, **{"slot.name": f"s_{db}", "publication.name": f"p_{db}",
                                                          "snapshot.mode": "never", **extra})
    if yb.password:
        config["database.password"] = yb.password
    return Running(config)


def _statements(yb: YugabyteServer, db: str, run: Running, n: int) -> list[dict]:
    """The chapter's INSERT, UPDATE and DELETE; the first ``n`` events (tombstones left out)."""
    yb.execute("INSERT INTO employee VALUES (1001, 'Alice', 'Packaging')", db)
    yb.execute("UPDATE employee SET employee_name = 'Bob' WHERE employee_id = 1001", db)
    yb.execute("DELETE FROM employee WHERE employee_id = 1001", db)
    return [e for e in run.wait_data(TOPIC, n + 1, timeout=120) if e["value"] is not None][:n]


@pytest.mark.parametrize("identity,plugin", [("CHANGE", "yboutput"), ("DEFAULT", "yboutput"), ("FULL", "yboutput"),
                                             ("DEFAULT", "pgoutput"), ("FULL", "pgoutput")])
def test_replica_identity_examples_on_yugabytedb(yugabyte, yb_db, identity, plugin):
    """AS-35..AS-37 on the real thing: before/after/op as the chapter's examples (decisions as in the data file)."""
    yugabyte.execute(EMPLOYEE, yb_db)
    yugabyte.execute(f"ALTER TABLE employee REPLICA IDENTITY {identity}", yb_db)  # before the slot exists
    run = _run(yugabyte, yb_db, **{"plugin.name": plugin})
    try:
        run.wait_streaming()
        events = _statements(yugabyte, yb_db, run, 3)
    finally:
        run.stop()
    expected = EXPECTED[f"{identity}/{plugin}"]
    for event, op in zip(events, ("c", "u", "d")):
        payload = event["value"]["payload"]
        assert payload["op"] == op and payload["source"]["connector"] == "YugabyteDB"
        for side in ("before", "after"):
            want = expected[op][side]
            got = payload[side] if want is None or plugin == "yboutput" else {k: payload[side][k] for k in want}
            assert got == want, (identity, plugin, op, side)


def test_replica_identity_is_frozen_at_slot_creation(yugabyte, yb_db):
    """AS-39: FULL set after the slot was created still gives DEFAULT's update (no before)."""
    yugabyte.execute(EMPLOYEE, yb_db)
    run = _run(yugabyte, yb_db, **{"plugin.name": "pgoutput"})
    try:
        run.wait_streaming()
        yugabyte.execute("ALTER TABLE employee REPLICA IDENTITY FULL", yb_db)
        _, update, _ = _statements(yugabyte, yb_db, run, 3)
    finally:
        run.stop()
    assert update["value"]["payload"]["before"] is None


def test_keyless_table_is_refused(yugabyte, yb_db):
    """YB-11 on YugabyteDB."""
    yugabyte.execute("CREATE TABLE audit_log (msg text)", yb_db)
    run = _run(yugabyte, yb_db)
    run.wait(lambda: run.error is not None, "the refusal", timeout=60)
    assert "public.audit_log has none" in str(run.error)


@pytest.mark.parametrize("lsn_type", ["SEQUENCE", "HYBRID_TIME"])
def test_slot_lsn_type_on_yugabytedb(yugabyte, yb_db, lsn_type):
    """YB-27: the slot is created with the LSN type, and streaming works with it (needs 2024.2 or newer)."""
    yugabyte.execute(EMPLOYEE, yb_db)
    run = _run(yugabyte, yb_db, **{"slot.lsn.type": lsn_type})
    try:
        run.wait_streaming()
        events = _statements(yugabyte, yb_db, run, 3)
    finally:
        run.stop()
    assert [e["value"]["payload"]["op"] for e in events] == ["c", "u", "d"]
    [(kind,)] = yugabyte.execute(f"SELECT yb_lsn_type FROM pg_replication_slots WHERE slot_name = 's_{yb_db}'")
    assert kind == lsn_type


def test_initial_snapshot_then_stream(yugabyte, yb_db):
    """The chapter's default snapshot mode on YugabyteDB: READs in cells, then changes."""
    yugabyte.execute(EMPLOYEE, yb_db)
    yugabyte.execute("INSERT INTO employee VALUES (1000, 'Zed', 'Shipping')", yb_db)
    run = _run(yugabyte, yb_db, **{"snapshot.mode": "initial"})
    try:
        run.wait_streaming()
        yugabyte.execute("INSERT INTO employee VALUES (1001, 'Alice', 'Packaging')", yb_db)
        read, create = run.wait_data(TOPIC, 2, timeout=120)
    finally:
        run.stop()
    assert read["value"]["payload"]["op"] == "r"
    assert read["value"]["payload"]["after"]["employee_name"] == {"value": "Zed", "set": True}
    assert create["value"]["payload"]["op"] == "c"
