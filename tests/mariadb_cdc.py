"""Helpers for end-to-end MariaDB tests: a Debezium Server configuration for the throwaway server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CUSTOMERS = """CREATE TABLE customers (
  id INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY,
  first_name VARCHAR(255) NOT NULL,
  last_name VARCHAR(255) NOT NULL,
  email VARCHAR(255) NOT NULL UNIQUE KEY
) AUTO_INCREMENT=1001"""


def mariadb_properties(server, database: str, workdir: Path, **source: Any) -> dict[str, Any]:
    """A Debezium Server configuration: a MariaDB source on ``server``, the file sink, file offsets and history."""
    props: dict[str, Any] = {
        "debezium.sink.type": "file",
        "debezium.sink.file.dir": str(workdir / "events"),
        "debezium.source.connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
        "debezium.source.database.hostname": server.host,
        "debezium.source.database.port": server.port,
        "debezium.source.database.user": server.user,
        "debezium.source.database.password": server.password,
        "debezium.source.database.server.id": 5500,
        "debezium.source.database.include.list": database,
        "debezium.source.topic.prefix": "dbserver1",
        "debezium.source.offset.storage.file.filename": str(workdir / "offsets.json"),
        "debezium.source.offset.flush.interval.ms": 0,
        "debezium.source.schema.history.internal.file.filename": str(workdir / "history.jsonl"),
        "debezium.source.poll.interval.ms": 100,
    }
    props.update({f"debezium.source.{k}": v for k, v in source.items()})
    return props
