"""The MySQL connector against a genuine MySQL 8: testcontainers where a Docker engine runs, or an external server.

``CDC_TEST_MYSQL8=mysql://user:password@host:port`` points the tests at a running MySQL 8 (ROW binlog,
FULL row images, GTIDs on, ``binlog_rows_query_log_events=ON``); otherwise a ``mysql:8.0`` container
is started with those settings. Without either, every test is skipped with the reason (no Docker
engine here: MariaDB covers the shared code paths, these cover MySQL's own: ``uuid:n`` GTIDs and
GTID sets, BEGIN events carrying the thread id, rows-query events, binary JSON).
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlparse

import orjson
import pymysql
import pytest

from cdc_core.containers import docker_problem

from cdc_core.engine import Engine
from cdc_core.stores.memory_history import MemorySchemaHistoryStore
from cdc_core.stores.memory_offsets import MemoryOffsetStore

IMAGE = "mysql:8.0"
SERVER_ARGS = ("--server-id=1 --log-bin=mysql-bin --binlog-format=ROW --binlog-row-image=FULL --gtid-mode=ON "
               "--enforce-gtid-consistency=ON --binlog-rows-query-log-events=ON --default-time-zone=+00:00")


class MySqlServer:
    """Where a MySQL 8 listens, and a few helpers on it."""

    def __init__(self, host: str, port: int, user: str, password: str):
        self.host, self.port, self.user, self.password = host, port, user, password

    def connect(self, database: str | None = None) -> pymysql.connections.Connection:
        """An autocommit connection."""
        return pymysql.connect(host=self.host, port=self.port, user=self.user, password=self.password,
                               database=database, charset="utf8mb4", autocommit=True)

    def execute(self, statements: str | list[str], database: str | None = None) -> list[tuple[Any, ...]] | None:
        """Run statements in order; the last one's rows."""
        rows = None
        with self.connect(database) as conn, conn.cursor() as cur:
            for statement in [statements] if isinstance(statements, str) else statements:
                cur.execute(statement)
                rows = list(cur.fetchall()) if cur.description else None
        return rows



@pytest.fixture(scope="session")
def mysql8() -> Iterator[MySqlServer]:
    """A MySQL 8 server: CDC_TEST_MYSQL8, else a testcontainers ``mysql:8.0``; skipped naming what is missing."""
    url = os.environ.get("CDC_TEST_MYSQL8")
    if url:
        u = urlparse(url)
        yield MySqlServer(u.hostname or "127.0.0.1", u.port or 3306, u.username or "root", u.password or "")
        return
    problem = docker_problem("CDC_TEST_MYSQL8", "MySQL 8")
    if problem:
        pytest.skip(problem)
    from testcontainers.community.mysql import MySqlContainer

    container = MySqlContainer(IMAGE, root_password="cdc-root").with_command(SERVER_ARGS)
    with container:
        yield MySqlServer(container.get_container_host_ip(), int(container.get_exposed_port(3306)), "root", "cdc-root")


@pytest.fixture
def mysql8_db(mysql8: MySqlServer) -> Iterator[str]:
    """A fresh database for one test."""
    name = f"test_{uuid.uuid4().hex[:12]}"
    mysql8.execute(f"CREATE DATABASE `{name}`")
    yield name
    mysql8.execute(f"DROP DATABASE IF EXISTS `{name}`")


class Run:
    """The MySQL connector in a thread, with stores that survive restarts."""

    def __init__(self, server: MySqlServer, db: str, **extra: Any):
        self.config = {"connector.class": "io.debezium.connector.mysql.MySqlConnector", "topic.prefix": "mysql-server-1",
                       "database.hostname": server.host, "database.port": server.port, "database.user": server.user,
                       "database.password": server.password, "database.server.id": 184054,
                       "database.include.list": db, "poll.interval.ms": 20, **extra}
        self.offsets, self.history = MemoryOffsetStore(), MemorySchemaHistoryStore()
        self.records: list[Any] = []
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None
        self.engine: Engine | None = None

    def start(self) -> Run:
        """Start the engine."""
        self.engine = engine = Engine(self.config, offset_store=self.offsets, history_store=self.history)

        def run() -> None:
            try:
                engine.run(self.records.extend)
            except BaseException as e:  # noqa: BLE001 - reported by wait
                self.error = e

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        return self

    def wait(self, done: Callable[[list[Any]], bool], what: str, timeout: float = 60) -> list[Any]:
        """Wait until ``done(records)``."""
        deadline = time.monotonic() + timeout
        while not done(self.records):
            assert self.thread is not None and self.thread.is_alive(), f"the engine stopped before {what}: {self.error!r}"
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.02)
        return self.records

    def stop(self) -> None:
        """Stop the engine."""
        if self.engine is not None:
            self.engine.stop()
            assert self.thread is not None
            self.thread.join(30)
            self.engine = None


def _ops(records: list[Any], op: str) -> list[Any]:
    return [r for r in records if r.value is not None and r.value.get("op") == op]


CUSTOMERS = ("CREATE TABLE customers (id INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY, first_name VARCHAR(255) NOT NULL, "
             "last_name VARCHAR(255) NOT NULL, email VARCHAR(255) NOT NULL UNIQUE KEY) AUTO_INCREMENT=1001")
INSERT = "INSERT INTO customers (first_name, last_name, email) VALUES ('Anne', 'Kretchmar', 'annek@noanswer.org')"


def test_documented_create_event_on_mysql8(mysql8, mysql8_db):
    """MySQL's own source fields: connector mysql, the uuid:n GTID, the BEGIN event's thread id, the rows-query SQL."""
    mysql8.execute([CUSTOMERS, "INSERT INTO customers (first_name, last_name, email) VALUES ('S', 'T', 's@t')"], mysql8_db)
    run = Run(mysql8, mysql8_db, **{"include.query": "true"}).start()
    try:
        run.wait(lambda rs: len(_ops(rs, "r")) == 1, "the snapshot")
        mysql8.execute(INSERT, mysql8_db)
        create = _ops(run.wait(lambda rs: len(_ops(rs, "c")) == 1, "the insert"), "c")[0]
    finally:
        run.stop()
    assert create.key == {"id": 1002}
    assert create.value_schema.field("source").schema.name == "io.debezium.connector.mysql.Source"
    source = create.value["source"]
    assert source["connector"] == "mysql" and source["snapshot"] == "false" and source["table"] == "customers"
    server_uuid = mysql8.execute("SELECT @@server_uuid")[0][0]
    assert source["gtid"].startswith(f"{server_uuid}:")
    assert isinstance(source["thread"], int) and source["query"] == INSERT
    assert create.value["after"] == {"id": 1002, "first_name": "Anne", "last_name": "Kretchmar", "email": "annek@noanswer.org"}


def test_resume_after_restart_uses_mysql_gtid_sets(mysql8, mysql8_db):
    """Offsets carry MySQL's uuid:1-n GTID set; a restart resumes after the last change without repeats."""
    mysql8.execute(CUSTOMERS, mysql8_db)
    run = Run(mysql8, mysql8_db).start()
    try:
        run.wait(lambda rs: run.engine is not None and run.engine.metrics.streaming.connected, "streaming")
        mysql8.execute(INSERT, mysql8_db)
        run.wait(lambda rs: len(_ops(rs, "c")) == 1, "the first insert")
    finally:
        run.stop()
    offset = run.offsets.get({"server": "mysql-server-1"})
    server_uuid = mysql8.execute("SELECT @@server_uuid")[0][0]
    assert server_uuid in offset["gtids"] and ":1-" in offset["gtids"]
    mysql8.execute("INSERT INTO customers (first_name, last_name, email) VALUES ('B', 'C', 'b@c')", mysql8_db)
    run.records.clear()
    run.start()
    try:
        run.wait(lambda rs: len(_ops(rs, "c")) == 1, "the insert made while stopped")
        time.sleep(0.5)
    finally:
        run.stop()
    assert [r.key for r in _ops(run.records, "c")] == [{"id": 1002}] and not _ops(run.records, "r")


def test_binary_json_and_transaction_ids(mysql8, mysql8_db):
    """MySQL's binary JSON decodes to the same document the snapshot reads; transaction ids are the GTIDs."""
    mysql8.execute("CREATE TABLE docs (id INT PRIMARY KEY, body JSON)", mysql8_db)
    document = '{"k": 1, "a": [1, "two", null, 2.5], "o": {"x": true}}'
    mysql8.execute(f"INSERT INTO docs VALUES (1, '{document}')", mysql8_db)
    run = Run(mysql8, mysql8_db, **{"provide.transaction.metadata": "true"}).start()
    try:
        run.wait(lambda rs: len(_ops(rs, "r")) == 1, "the snapshot")
        mysql8.execute(f"INSERT INTO docs VALUES (2, '{document}')", mysql8_db)
        records = run.wait(lambda rs: len(_ops(rs, "c")) == 1, "the insert")
    finally:
        run.stop()
    snap, stream = _ops(records, "r")[0], _ops(records, "c")[0]
    assert orjson.loads(snap.value["after"]["body"]) == orjson.loads(stream.value["after"]["body"]) == orjson.loads(document)
    assert stream.value_schema.field("after").schema.field("body").schema.name == "io.debezium.data.Json"
    assert stream.value["transaction"]["id"] == stream.value["source"]["gtid"]
