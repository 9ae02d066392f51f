"""Tests for the replication connection against a real throwaway PostgreSQL server."""

from __future__ import annotations

import multiprocessing
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

from cdc_core.events import UNAVAILABLE
from cdc_postgres.embedded import EmbeddedPostgres
from cdc_postgres.pgoutput import (
    Begin,
    Commit,
    Delete,
    Insert,
    Message,
    PgOutputMessage,
    Relation,
    RelationColumn,
    Truncate,
    Update,
    decode,
)
from cdc_postgres.replication import (
    ReplicationConnection,
    ReplicationConnectionLost,
    ReplicationError,
    format_lsn,
    parse_lsn,
    publication_names,
)

OPTIONS = {
    "proto_version": "1",
    "publication_names": publication_names(["pub"]),
    "messages": "true",
}


def slot_name() -> str:
    """A unique replication slot name (slots are cluster-wide)."""
    return f"slot_{uuid.uuid4().hex[:12]}"


def read_until(
    rc: ReplicationConnection,
    done: Callable[[list[PgOutputMessage]], bool],
    timeout: float = 10.0,
) -> list[PgOutputMessage]:
    """Read and decode messages until ``done(messages)`` holds; fail after ``timeout``."""
    messages: list[PgOutputMessage] = []
    deadline = time.monotonic() + timeout
    while not done(messages):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for messages; got {messages!r}")
        messages.extend(decode(x.payload) for x in rc.read(0.2))
    return messages


def commits(n: int) -> Callable[[list[PgOutputMessage]], bool]:
    """A ``read_until`` condition: at least ``n`` Commit messages have arrived."""
    return lambda msgs: sum(isinstance(m, Commit) for m in msgs) >= n


def slot_row(pg: EmbeddedPostgres, slot: str) -> tuple[Any, ...]:
    """Return (confirmed_flush_lsn text, active) for ``slot``."""
    rows = pg.execute(
        "SELECT confirmed_flush_lsn::text, active FROM pg_replication_slots WHERE slot_name = %s",
        params=(slot,),
    )
    assert rows, f"slot {slot} does not exist"
    return rows[0]


def wait_for(condition: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    """Poll ``condition`` until it holds; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.fixture
def table_db(pg_server: EmbeddedPostgres, pg_db: str) -> str:
    """``pg_db`` with table ``t(id int pk, name text, note text)`` and publication ``pub``."""
    pg_server.execute(
        "CREATE TABLE t (id int PRIMARY KEY, name text, note text);"
        "CREATE PUBLICATION pub FOR TABLE t",
        pg_db,
    )
    return pg_db


@pytest.fixture
def repl(pg_server: EmbeddedPostgres, table_db: str) -> Iterator[ReplicationConnection]:
    """An open replication connection to ``table_db`` (closed after the test)."""
    rc = ReplicationConnection(pg_server.conninfo(table_db), status_interval=1.0)
    try:
        yield rc
    finally:
        rc.close()


def test_lsn_parse_and_format() -> None:
    """LSNs round-trip between text and int; junk is rejected."""
    assert parse_lsn("16/B374D848") == 0x16_B374D848
    assert format_lsn(0x16_B374D848) == "16/B374D848"
    assert format_lsn(0) == "0/0"
    assert parse_lsn(format_lsn(2**64 - 1)) == 2**64 - 1
    with pytest.raises(ValueError, match="LSN"):
        parse_lsn("nonsense")


def test_identify_system(
    repl: ReplicationConnection, table_db: str, pg_server: EmbeddedPostgres
) -> None:
    """IDENTIFY_SYSTEM reports the database, timeline 1 and the current WAL position."""
    info = repl.identify_system()
    rows = pg_server.execute("SELECT pg_current_wal_lsn()::text")
    assert rows is not None
    current = parse_lsn(rows[0][0])
    assert info["dbname"] == table_db
    assert info["timeline"] == 1
    assert info["systemid"].isdigit()
    assert 0 < info["xlogpos"] <= current


def test_exported_snapshot_then_stream_changes(
    pg_server: EmbeddedPostgres, table_db: str, repl: ReplicationConnection
) -> None:
    """The exported snapshot shows rows before the slot; the stream carries changes after it."""
    pg_server.execute("INSERT INTO t VALUES (1, 'a', 'x'), (2, 'b', NULL)", table_db)
    slot = slot_name()
    created = repl.create_slot(slot)
    assert created.slot_name == slot
    assert created.snapshot_name
    assert created.output_plugin == "pgoutput"
    assert created.consistent_point > 0

    pg_server.execute("INSERT INTO t VALUES (3, 'c', NULL)", table_db)  # after the slot
    with psycopg.connect(pg_server.conninfo(table_db), autocommit=True) as snap:
        snap.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        snap.execute(
            sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(created.snapshot_name))
        )
        snapshot_rows = snap.execute("SELECT id, name, note FROM t ORDER BY id").fetchall()
        snap.execute("COMMIT")
    assert snapshot_rows == [(1, "a", "x"), (2, "b", None)]

    pg_server.execute("UPDATE t SET name = 'bb' WHERE id = 2", table_db)
    pg_server.execute("DELETE FROM t WHERE id = 1", table_db)

    repl.start(slot, created.consistent_point, OPTIONS)
    messages = read_until(repl, commits(3))
    kinds = [type(m).__name__ for m in messages]
    assert kinds == [
        "Begin", "Relation", "Insert", "Commit",
        "Begin", "Update", "Commit",
        "Begin", "Delete", "Commit",
    ]  # fmt: skip

    relation = messages[1]
    assert isinstance(relation, Relation)
    assert (relation.namespace, relation.name, relation.replica_identity) == ("public", "t", "d")
    assert relation.columns == (
        RelationColumn(True, "id", 23, -1),
        RelationColumn(False, "name", 25, -1),
        RelationColumn(False, "note", 25, -1),
    )
    oid = relation.oid
    assert messages[2] == Insert(oid, ("3", "c", None))
    assert messages[5] == Update(oid, None, None, ("2", "bb", None))
    assert messages[8] == Delete(oid, "K", ("1", None, None))

    begins = [m for m in messages if isinstance(m, Begin)]
    ends = [m for m in messages if isinstance(m, Commit)]
    now_us = time.time_ns() // 1000
    for begin, commit in zip(begins, ends):
        assert begin.final_lsn == commit.commit_lsn < commit.end_lsn
        assert begin.commit_ts_us == commit.commit_ts_us
        assert abs(now_us - begin.commit_ts_us) < 60_000_000
    assert begins[0].final_lsn > created.consistent_point
    assert len({b.xid for b in begins}) == 3


def test_unchanged_toast_and_replica_identity_full(
    pg_server: EmbeddedPostgres, table_db: str, repl: ReplicationConnection
) -> None:
    """An untouched TOASTed column arrives as UNAVAILABLE; REPLICA IDENTITY FULL sends old rows."""
    big = "".join(uuid.uuid4().hex for _ in range(500))  # 16 kB, barely compressible
    pg_server.execute("INSERT INTO t VALUES (1, 'a', %s)", table_db, params=(big,))
    slot = slot_name()
    created = repl.create_slot(slot, export_snapshot=False)
    assert created.snapshot_name is None
    pg_server.execute("UPDATE t SET name = 'b' WHERE id = 1", table_db)
    pg_server.execute("ALTER TABLE t REPLICA IDENTITY FULL", table_db)
    pg_server.execute("UPDATE t SET name = 'c' WHERE id = 1", table_db)
    pg_server.execute("DELETE FROM t", table_db)
    repl.start(slot, 0, OPTIONS)
    messages = read_until(repl, commits(3))
    updates = [m for m in messages if isinstance(m, Update)]
    deletes = [m for m in messages if isinstance(m, Delete)]
    assert updates[0].new == ("1", "b", UNAVAILABLE)
    assert updates[0].old is None
    assert updates[1].old_kind == "O"
    assert updates[1].old == ("1", "b", big)
    assert updates[1].new[:2] == ("1", "c")
    assert deletes == [Delete(updates[0].relation_oid, "O", ("1", "c", big))]
    relations = [m for m in messages if isinstance(m, Relation)]
    assert relations[-1].replica_identity == "f"


def test_truncate_and_logical_messages(
    pg_server: EmbeddedPostgres, table_db: str, repl: ReplicationConnection
) -> None:
    """TRUNCATE and pg_logical_emit_message arrive as Truncate and Message."""
    slot = slot_name()
    repl.create_slot(slot, export_snapshot=False)
    pg_server.execute("INSERT INTO t VALUES (1, 'a', NULL)", table_db)
    pg_server.execute("TRUNCATE t RESTART IDENTITY CASCADE", table_db)
    pg_server.execute("SELECT pg_logical_emit_message(true, 'cdc', 'hello')", table_db)
    pg_server.execute("SELECT pg_logical_emit_message(false, 'cdc', '\\x00ff'::bytea)", table_db)
    repl.start(slot, 0, OPTIONS)
    def done(ms: list[PgOutputMessage]) -> bool:
        """Three commits and the non-transactional message have arrived."""
        return commits(3)(ms) and any(isinstance(m, Message) and not m.transactional for m in ms)

    messages = read_until(repl, done)
    oid = next(m.oid for m in messages if isinstance(m, Relation))
    assert Truncate(3, (oid,)) in messages
    emitted = [m for m in messages if isinstance(m, Message)]
    assert [(m.transactional, m.prefix, m.content) for m in emitted] == [
        (True, "cdc", b"hello"),
        (False, "cdc", b"\x00\xff"),
    ]


def test_confirm_advances_slot_and_reconnect_skips_confirmed(
    pg_server: EmbeddedPostgres, table_db: str
) -> None:
    """confirm() moves confirmed_flush_lsn; a restart from it resends only unconfirmed work."""
    slot = slot_name()
    conninfo = pg_server.conninfo(table_db)
    with ReplicationConnection(conninfo, status_interval=1.0) as rc:
        rc.create_slot(slot, export_snapshot=False)
        pg_server.execute("INSERT INTO t VALUES (1, 'first', NULL)", table_db)
        pg_server.execute("INSERT INTO t VALUES (2, 'second', NULL)", table_db)
        rc.start(slot, 0, OPTIONS)
        messages = read_until(rc, commits(2))
        first, second = [m for m in messages if isinstance(m, Commit)]
        assert rc.last_received_lsn >= second.end_lsn

        rc.confirm(first.end_lsn)
        rc.confirm(first.commit_lsn)  # going backwards is ignored
        assert rc.confirmed_lsn == first.end_lsn

        def slot_confirmed() -> bool:
            rc.read(0.05)
            return parse_lsn(slot_row(pg_server, slot)[0]) >= first.end_lsn

        wait_for(slot_confirmed, what="confirmed_flush_lsn to advance")
        assert parse_lsn(slot_row(pg_server, slot)[0]) == first.end_lsn

    wait_for(lambda: not slot_row(pg_server, slot)[1], what="the slot to become inactive")
    confirmed = parse_lsn(slot_row(pg_server, slot)[0])
    assert confirmed == first.end_lsn
    with ReplicationConnection(conninfo, status_interval=1.0) as rc:
        rc.start(slot, confirmed, OPTIONS)
        assert rc.confirmed_lsn == confirmed
        again = read_until(rc, commits(1))
    inserts = [m for m in again if isinstance(m, Insert)]
    assert [i.new[:2] for i in inserts] == [("2", "second")]
    assert next(m for m in again if isinstance(m, Begin)).final_lsn == second.commit_lsn


def test_create_and_drop_temporary_and_persistent_slots(
    pg_server: EmbeddedPostgres, repl: ReplicationConnection
) -> None:
    """Slots can be created without a snapshot, temporary, and dropped again."""
    temp, persistent = slot_name(), slot_name()
    created = repl.create_slot(temp, export_snapshot=False, temporary=True)
    assert created.snapshot_name is None
    repl.create_slot(persistent, export_snapshot=False)
    rows = pg_server.execute(
        "SELECT slot_name, temporary FROM pg_replication_slots WHERE slot_name IN (%s, %s)"
        " ORDER BY temporary",
        params=(temp, persistent),
    )
    assert rows == [(persistent, False), (temp, True)]
    repl.drop_slot(persistent)
    with pytest.raises(ReplicationError, match="does not exist") as info:
        repl.drop_slot(persistent)
    assert info.value.sqlstate == "42704"


def test_start_on_missing_slot_names_the_problem(repl: ReplicationConnection) -> None:
    """START_REPLICATION for an unknown slot raises with the server message and SQLSTATE."""
    with pytest.raises(ReplicationError) as info:
        repl.start("no_such_slot", 0, OPTIONS)
    assert 'replication slot "no_such_slot" does not exist' in str(info.value)
    assert "42704" in str(info.value)
    assert info.value.sqlstate == "42704"
    with pytest.raises(ReplicationError, match="before start"):
        repl.read(0.1)


def test_connecting_to_a_closed_port_names_host_and_port() -> None:
    """A refused connection names 127.0.0.1 and the port, never the password."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    conninfo = f"host=127.0.0.1 port={port} user=postgres password=s3cr3t dbname=postgres"
    with pytest.raises(ReplicationError) as info:
        ReplicationConnection(conninfo, connect_timeout=2)
    message = str(info.value)
    assert isinstance(info.value, ConnectionError)
    assert f"127.0.0.1:{port}" in message
    assert "s3cr3t" not in message


def test_keepalive_requests_are_answered(pg_server: EmbeddedPostgres, table_db: str) -> None:
    """With a 2 s wal_sender_timeout, answering keepalives keeps an idle stream alive."""
    slot = slot_name()
    conninfo = pg_server.conninfo(
        table_db, application_name=slot, options="-c wal_sender_timeout=2000"
    )
    with ReplicationConnection(conninfo, status_interval=600.0) as rc:
        rc.create_slot(slot, export_snapshot=False)
        rc.start(slot, 0, OPTIONS)
        deadline = time.monotonic() + 3.5
        while time.monotonic() < deadline:
            assert rc.read(0.5) == []
        assert rc.server_wal_end > 0
        rows = pg_server.execute(
            "SELECT reply_time IS NOT NULL FROM pg_stat_replication WHERE application_name = %s",
            params=(slot,),
        )
        assert rows == [(True,)]
        pg_server.execute("INSERT INTO t VALUES (1, 'still alive', NULL)", table_db)
        messages = read_until(rc, commits(1))
        assert any(isinstance(m, Insert) for m in messages)


def test_terminated_walsender_raises_connection_lost(
    pg_server: EmbeddedPostgres, table_db: str, repl: ReplicationConnection
) -> None:
    """When the server ends the session, read() raises ReplicationConnectionLost."""
    slot = slot_name()
    repl.create_slot(slot, export_snapshot=False)
    repl.start(slot, 0, OPTIONS)
    wait_for(lambda: bool(slot_row(pg_server, slot)[1]), what="the slot to become active")
    pg_server.execute(
        "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = %s",
        params=(slot,),
    )
    with pytest.raises(ReplicationConnectionLost, match=f"127.0.0.1:{pg_server.port}"):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            repl.read(0.2)
    assert repl.closed


def test_server_crash_and_restart() -> None:
    """A killed server surfaces as ReplicationConnectionLost; after restart the slot streams on."""
    with EmbeddedPostgres() as pg:
        pg.execute("CREATE TABLE t (id int PRIMARY KEY); CREATE PUBLICATION pub FOR TABLE t")
        rc = ReplicationConnection(pg.conninfo(), status_interval=1.0)
        rc.create_slot("crash", export_snapshot=False)
        rc.start("crash", 0, OPTIONS)
        pg.execute("INSERT INTO t VALUES (1)")
        read_until(rc, commits(1))
        pg.kill()
        assert not pg.running
        with pytest.raises(ReplicationConnectionLost):
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                rc.read(0.2)
        pg.restart()
        pg.execute("INSERT INTO t VALUES (2)")
        with ReplicationConnection(pg.conninfo(), status_interval=1.0) as again:
            again.start("crash", 0, OPTIONS)
            messages = read_until(
                again, lambda ms: any(isinstance(m, Insert) and m.new == ("2",) for m in ms)
            )
        assert isinstance(messages[0], Begin)


def test_wal_level_replica_rejects_logical_slots() -> None:
    """Settings overrides apply: with wal_level=replica logical slots cannot be created."""
    with EmbeddedPostgres(settings={"wal_level": "replica"}) as pg:
        assert pg.execute("SHOW wal_level") == [("replica",)]
        with ReplicationConnection(pg.conninfo()) as rc:
            with pytest.raises(ReplicationError, match="wal_level"):
                rc.create_slot("nope")


def test_a_replication_error_from_a_streaming_worker_keeps_its_sqlstate():
    """Streaming workers send their errors to the engine through a pipe (pickled)."""
    receiving, sending = multiprocessing.Pipe(duplex=False)
    sending.send(ReplicationError('replication slot "cdc" does not exist', "42704"))
    arrived = receiving.recv()
    assert (type(arrived), str(arrived), arrived.sqlstate) == (
        ReplicationError, 'replication slot "cdc" does not exist', "42704")
