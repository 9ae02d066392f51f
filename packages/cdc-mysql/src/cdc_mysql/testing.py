"""Pytest fixtures for MySQL/MariaDB tests: one throwaway MariaDB per test session, one database per test.

Loaded by the repository's root conftest (``pytest_plugins``), so every package shares one server.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from cdc_mysql.embedded import EmbeddedMariaDB


@pytest.fixture(scope="session")
def mariadb_server() -> Iterator[EmbeddedMariaDB]:
    """A started ``EmbeddedMariaDB`` (ROW binlog, full images and metadata), stopped after the session."""
    server = EmbeddedMariaDB()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def mariadb_db(mariadb_server: EmbeddedMariaDB) -> Iterator[str]:
    """A fresh database on ``mariadb_server`` for one test; yields its name and drops it afterwards."""
    name = f"test_{uuid.uuid4().hex[:12]}"
    mariadb_server.create_database(name)
    try:
        yield name
    finally:
        if mariadb_server.running:
            mariadb_server.execute(f"DROP DATABASE IF EXISTS `{name}`")
