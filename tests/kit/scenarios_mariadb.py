"""The MariaDB connector's side of the data-driven scenarios: topics by table name, its filter, its own steps.

A scenario's ``unparseable_ddl`` (a list of ``{contains: text, name_tables: bool}``) makes the DDL
parser reject the statements containing ``text``, for the paths a parser failure takes. Steps of
its own: ``history`` (the schema history holds DDL), ``purge_binlogs``, ``lose_history``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, ClassVar

from cdc_core.engine import Engine
from cdc_core.stores.memory_history import MemorySchemaHistoryStore
from cdc_mysql import ddl as mysql_ddl
from kit.scenarios import ScenarioRun
from mariadb_cdc import connector_config


def _history(run: ScenarioRun, arg: dict[str, Any]) -> None:
    ddl = [r.get("ddl", "") for r in run.history.records()]
    for text in arg.get("contains", []):
        assert any(text in d for d in ddl), f"no history record contains {text!r}: {ddl}"
    if "count" in arg:
        assert len(ddl) == arg["count"], ddl


def _purge_binlogs(run: ScenarioRun, arg: Any) -> None:
    """Rotate the binlog and purge every older file (the stored position is gone)."""
    run.server.execute("FLUSH BINARY LOGS")
    current = run.server.execute("SHOW MASTER STATUS")[0][0]
    deadline = time.monotonic() + 10
    while True:  # a file a (just stopped) replica still reads is kept: retry until it is gone
        run.server.execute(f"PURGE BINARY LOGS TO '{current}'")
        first = run.server.execute("SHOW BINARY LOGS")[0][0]
        if first == current or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert first == current, f"the binlog files before {current} could not be purged"


def _lose_history(run: ScenarioRun, arg: Any) -> None:
    run.history = MemorySchemaHistoryStore()


def _unparseable(rules: list[dict[str, Any]]) -> Callable[[], None]:
    """Make DDL statements containing a rule's text unparseable (naming their tables if it says so); return an undo."""
    original = mysql_ddl.SchemaModel.apply

    def apply(self: Any, sql: str, database: str | None) -> Any:
        for rule in rules:
            if rule["contains"] in sql:
                tables = mysql_ddl.mentioned_tables(mysql_ddl.tokenize(sql), database) if rule.get("name_tables") else []
                raise mysql_ddl.UnparseableDdl(sql, "made unparseable by the scenario", tables)
        return original(self, sql, database)

    mysql_ddl.SchemaModel.apply = apply  # type: ignore[method-assign]
    return lambda: setattr(mysql_ddl.SchemaModel, "apply", original)


class MariaDBScenarioRun(ScenarioRun):
    """The MariaDB connector on the test database, stores in memory; topics named by table."""

    prefix: ClassVar[str] = "mysql-server-1"
    steps: ClassVar[dict[str, Any]] = {"history": _history, "purge_binlogs": _purge_binlogs,
                                       "lose_history": _lose_history}

    def __init__(self, *args: Any):
        super().__init__(*args)
        if self.scenario.get("unparseable_ddl"):
            self.cleanups.append(_unparseable(self.scenario["unparseable_ddl"]))

    def base_config(self, prefix: str) -> dict[str, Any]:
        """The MariaDB connector capturing the test database."""
        return connector_config(self.server, self.db, **{"topic.prefix": prefix})

    def topic(self, name: str) -> str:
        """A table name is ``<prefix>.<db>.<table>``."""
        prefix = self.names["prefix"]
        if name in ("schema", "transaction", "heartbeat") or name.startswith((prefix + ".", "P.")):
            return super().topic(name)
        return f"{prefix}.{self.db}.{name}"

    def watched(self, record: Any) -> bool:
        """The data topics unless ``watch`` says otherwise; of the snapshot's schema changes, this database's CREATEs.

        The snapshot's schema change events that name no table being created (SET character_set_server,
        DROP TABLE/DATABASE IF EXISTS, CREATE DATABASE, USE: tests/test_mariadb_fidelity.py checks them)
        and those of other tests' databases on the shared server are left out.
        """
        prefix = self.names["prefix"]
        if record.topic == prefix and record.value is not None and record.value.get("source", {}).get("snapshot") == "true":
            changes = record.value.get("tableChanges") or []
            if record.value.get("databaseName") != self.db or not any(c.get("type") == "CREATE" for c in changes):
                return False
        if self.watch:
            return record.topic in self.watch
        return record.topic.startswith(f"{prefix}.") and record.topic != f"{prefix}.transaction"

    def ready(self, engine: Engine) -> bool:
        """Streaming, or a snapshot under way."""
        return engine.metrics.streaming.connected or engine.metrics.snapshot.running

    def sql(self, statements: list[str]) -> None:
        """Run the statements on one connection (session settings carry over)."""
        with self.server.connect(self.db) as conn, conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)

    def cleanup(self) -> None:
        """Undo the parser rules; drop the databases the scenario created (``<db>_...``)."""
        super().cleanup()
        for (name,) in self.server.execute(f"SHOW DATABASES LIKE '{self.db}\\_%'") or []:
            self.server.execute(f"DROP DATABASE `{name}`")
