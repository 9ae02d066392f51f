"""Helpers for MariaDB tests: connector configurations for the throwaway server, and the engine in a thread."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cdc_core.events import ChangeRecord
from kit.engine import WAIT_S, EngineThread  # noqa: F401 - imported from here by the MariaDB tests

CUSTOMERS = """CREATE TABLE customers (
  id INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY,
  first_name VARCHAR(255) NOT NULL,
  last_name VARCHAR(255) NOT NULL,
  email VARCHAR(255) NOT NULL UNIQUE KEY
) AUTO_INCREMENT=1001"""


def mariadb_properties(server, database: str, workdir: Path, **source: Any) -> dict[str, Any]:
    """A Debezium Server configuration: a MariaDB source on ``server``, the file sink, file offsets and history."""
    from kit.contract import Workdir
    from kit.mariadb import MariaDBFixture

    return MariaDBFixture(server, database).properties(Workdir(workdir), **source)


def connector_config(server, database: str, **extra: Any) -> dict[str, Any]:
    """An embedded-engine configuration of the MariaDB connector capturing ``database`` on ``server``."""
    return {
        "connector.class": "mariadb",
        "topic.prefix": "dbserver1",
        "database.hostname": server.host,
        "database.port": server.port,
        "database.user": server.user,
        "database.password": server.password,
        "database.server.id": 5600,
        "database.include.list": database,
        "poll.interval.ms": 20,
        "offset.flush.interval.ms": 0,
        **extra,
    }


def count_ops(records: list[ChangeRecord], op: str, table: str | None = None) -> int:
    """How many records of ``op`` (on topics ending in ``.table``, if given)."""
    return sum(1 for r in records if r.value is not None and r.value.get("op") == op
               and (table is None or r.topic.endswith("." + table)))
