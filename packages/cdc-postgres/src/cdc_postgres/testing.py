"""Pytest fixtures for PostgreSQL tests: one throwaway server per test session, one database per test.

Loaded by the repository's root conftest (``pytest_plugins``), so every package shares one server.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from psycopg import sql

from cdc_postgres.embedded import EmbeddedPostgres


@pytest.fixture(scope="session")
def pg_server() -> Iterator[EmbeddedPostgres]:
    """A started ``EmbeddedPostgres`` (wal_level=logical, trust auth), stopped after the session."""
    server = EmbeddedPostgres()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _drop_database(server: EmbeddedPostgres, name: str) -> None:
    """Drop ``name`` with its replication slots, ending any session that still uses them."""
    deadline = time.monotonic() + 10.0
    while True:
        server.execute(
            "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots"
            " WHERE database = %s AND active_pid IS NOT NULL",
            params=(name,),
        )
        try:
            server.execute(
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
                " WHERE database = %s",
                params=(name,),
            )
            break
        except Exception:  # a terminated walsender may not have released its slot yet
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    server.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def pg_db(pg_server: EmbeddedPostgres) -> Iterator[str]:
    """A fresh database on ``pg_server`` for one test; yields its name and drops it afterwards."""
    name = f"test_{uuid.uuid4().hex[:12]}"
    pg_server.create_database(name)
    try:
        yield name
    finally:
        if pg_server.running:
            _drop_database(pg_server, name)
