"""Acceptance scenarios as data, against the throwaway MariaDB: setup SQL, configuration, steps, expectations.

A scenario file (``tests/data/mariadb_scenarios/<group>.yaml``) is a list of scenarios::

    - id: AS-04
      title: Insert
      setup: [SQL run before the connector starts]
      config: {connector properties on top of the defaults}
      watch: [topics the expect steps look at; default: the data topics]
      steps:
        - start                         # or start: {properties}
        - sql: INSERT ...               # a statement or a list
        - expect: [record, ...]         # the next records on watched topics, in order
        - nothing_more: 0.5             # no further watched record within that many seconds

Every string may use ``{db}`` (the test's database) and ``{prefix}`` (``topic.prefix``). A topic
is written as a table name (``customers``: ``<prefix>.<db>.customers``), ``schema`` (the schema
change topic), ``transaction`` or ``heartbeat``. A record expectation holds ``topic``, ``key``,
``tombstone: true``, ``op``, ``before``, ``after`` (exact), ``source``/``value``/``transaction``
(subsets: only the keys given are compared), ``headers`` and ``after_schema`` (field name -> subset
of its schema JSON). ``<any>``, ``<not null>``, ``<int>``, ``<str>`` and ``<gtid>`` match any such value.
A scenario's ``slow_handler`` (seconds per batch) holds the engine back, so a small
``max.queue.size`` keeps a snapshot running while steps act; its ``unparseable_ddl`` (a list of
``{contains: text, name_tables: bool}``) makes the DDL parser reject the statements containing
``text``, for the paths a parser failure takes. The other steps
are documented in ``STEPS`` below.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from cdc_core.engine import Engine
from cdc_mysql import ddl as mysql_ddl
from cdc_core.stores.memory_history import MemorySchemaHistoryStore
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from mariadb_cdc import connector_config

PREFIX = "mysql-server-1"
DATA_DIR = Path(__file__).parent / "data" / "mariadb_scenarios"


def load_all() -> list[tuple[str, dict[str, Any]]]:
    """(group, scenario) for every scenario of every fixture file, in file order."""
    out = []
    for path in sorted(DATA_DIR.glob("*.yaml")):
        for scenario in yaml.safe_load(path.read_text(encoding="utf-8")):
            out.append((path.stem, scenario))
    return out


def _fill(value: Any, names: dict[str, str]) -> Any:
    """``value`` with ``{db}`` and ``{prefix}`` replaced in every string."""
    if isinstance(value, str):
        for k, v in names.items():
            value = value.replace("{" + k + "}", v)
        return value
    if isinstance(value, list):
        return [_fill(v, names) for v in value]
    if isinstance(value, dict):
        return {_fill(k, names): _fill(v, names) for k, v in value.items()}
    return value


def differences(expected: Any, actual: Any, path: str, exact: bool = False) -> list[str]:
    """Where ``actual`` differs from ``expected`` (dicts: only expected keys unless ``exact``)."""
    if expected == "<any>":
        return []
    if expected == "<not null>":
        return [] if actual is not None else [f"{path}: expected a value, got null"]
    if expected == "<gtid>":
        ok = isinstance(actual, str) and re.fullmatch(r"\d+-\d+-\d+", actual) is not None
        return [] if ok else [f"{path}: expected a MariaDB GTID, got {actual!r}"]
    if expected == "<str>":
        return [] if isinstance(actual, str) else [f"{path}: expected a string, got {actual!r}"]
    if expected == "<int>":
        return [] if isinstance(actual, int) and not isinstance(actual, bool) else [f"{path}: expected an int, got {actual!r}"]
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected an object, got {actual!r}"]
        out = []
        if exact and set(actual) != set(expected):
            out.append(f"{path}: keys {sorted(actual)} != {sorted(expected)}")
        for k, v in expected.items():
            if k not in actual:
                out.append(f"{path}.{k}: missing")
            else:
                out += differences(v, actual[k], f"{path}.{k}", exact)
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{path}: expected {expected!r}, got {actual!r}"]
        return [d for i, (e, a) in enumerate(zip(expected, actual)) for d in differences(e, a, f"{path}[{i}]", exact)]
    if expected == actual and type(expected) is type(actual):
        return []
    return [f"{path}: expected {expected!r}, got {actual!r}"]


class ScenarioRun:
    """One scenario's connector: restartable, with offsets and schema history that survive restarts."""

    def __init__(self, server: Any, db: str, scenario: dict[str, Any]):
        self.server = server
        self.db = db
        self.names = {"db": db, "prefix": PREFIX}
        self.scenario = _fill(scenario, self.names)
        self.config = connector_config(server, db, **{"topic.prefix": PREFIX, **{
            k: str(v) for k, v in (self.scenario.get("config") or {}).items()}})
        self.offsets = MemoryOffsetStore()
        self.history = MemorySchemaHistoryStore()
        self.records: list[Any] = []
        self.seen = 0
        self.engine: Engine | None = None
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self.watch = {self.topic(t) for t in self.scenario.get("watch", [])}
        #: Seconds the handler sleeps per batch (with a small max.queue.size, this holds a snapshot back).
        self.slow_handler = float(self.scenario.get("slow_handler", 0))

    # -- naming ---------------------------------------------------------------------------------

    def topic(self, name: str) -> str:
        """A topic from its short form (table name, ``schema``, ``transaction``, ``heartbeat``)."""
        if name == "schema":
            return PREFIX
        if name == "transaction":
            return f"{PREFIX}.transaction"
        if name == "heartbeat":
            return f"__debezium-heartbeat.{PREFIX}"
        return name if name.startswith(PREFIX + ".") else f"{PREFIX}.{self.db}.{name}"

    def watched(self, record: Any) -> bool:
        """True if the expect steps look at this record.

        The snapshot's schema change events that name no table being created (SET character_set_server,
        DROP TABLE/DATABASE IF EXISTS, CREATE DATABASE, USE: tests/test_mariadb_fidelity.py checks them)
        and those of other tests' databases on the shared server are left out: scenarios see the
        snapshot's CREATE TABLE events and the streamed DDL.
        """
        if record.topic == PREFIX and record.value is not None and record.value.get("source", {}).get("snapshot") == "true":
            changes = record.value.get("tableChanges") or []
            if record.value.get("databaseName") != self.db or not any(c.get("type") == "CREATE" for c in changes):
                return False
        if self.watch:
            return record.topic in self.watch
        return record.topic.startswith(f"{PREFIX}.") and record.topic != f"{PREFIX}.transaction"

    # -- the connector --------------------------------------------------------------------------

    def start(self, overrides: dict[str, Any] | None = None) -> None:
        """Start the engine (with ``overrides`` on top of the configuration); wait until it snapshots or streams."""
        if overrides:
            self.config.update({k: str(v) for k, v in overrides.items()})
        self.error = None
        self.engine = engine = Engine(self.config, offset_store=self.offsets, history_store=self.history)

        def run() -> None:
            try:
                engine.run(self._handle)
            except BaseException as e:  # reported by the steps that wait
                self.error = e

        self.thread = threading.Thread(target=run, daemon=True, name="mariadb-scenario")
        self.thread.start()
        deadline = time.monotonic() + 30
        metrics = engine.metrics
        while time.monotonic() < deadline and self.thread.is_alive() and not (
                metrics.streaming.connected or metrics.snapshot.running):
            time.sleep(0.01)

    def _handle(self, records: list[Any]) -> None:
        self.records.extend(r for r in records if self.watched(r))
        if self.slow_handler:
            time.sleep(self.slow_handler)

    def stop(self) -> None:
        """Stop the engine and wait for it."""
        if self.engine is not None:
            self.engine.stop()
            assert self.thread is not None
            self.thread.join(30)
            assert not self.thread.is_alive(), "the engine did not stop"
        self.engine = None

    def take(self, n: int, timeout: float = 30.0) -> list[Any]:
        """The next ``n`` watched records."""
        deadline = time.monotonic() + timeout
        while len(self.records) - self.seen < n and time.monotonic() < deadline:
            if self.thread is not None and not self.thread.is_alive() and len(self.records) - self.seen < n:
                break
            time.sleep(0.01)
        got = self.records[self.seen:self.seen + n]
        self.seen += len(got)
        if len(got) != n:
            raise AssertionError(f"expected {n} records, got {len(got)}: {[brief(r) for r in got]}"
                                 + (f"; the connector failed: {self.error}" if self.error else ""))
        return got


def brief(r: Any) -> str:
    """A record in one line, for messages."""
    op = None if r.value is None else r.value.get("op", r.value.get("status", "schema change"))
    return f"{r.topic} {op} key={r.key}"


# --------------------------------------------------------------------------------- checks


def check_record(run: ScenarioRun, expected: dict[str, Any], record: Any) -> list[str]:
    """Differences between one record and its expectation."""
    where = brief(record)
    out = []
    if "topic" in expected and record.topic != run.topic(expected["topic"]):
        out.append(f"{where}: topic != {run.topic(expected['topic'])}")
    if "key" in expected:
        out += differences(expected["key"], record.key, f"{where} key", exact=True)
    if expected.get("tombstone"):
        return out + ([] if record.value is None else [f"{where}: expected a tombstone"])
    value = record.value
    if value is None:
        return out + [f"{where}: unexpected tombstone"]
    for name in ("op", "before", "after"):
        if name in expected:
            out += differences(expected[name], value.get(name), f"{where} {name}", exact=True)
    for name in ("source", "transaction"):
        if name in expected:
            out += differences(expected[name], value.get(name), f"{where} {name}")
    if "value" in expected:
        out += differences(expected["value"], value, f"{where} value")
    if "headers" in expected:
        out += differences(expected["headers"], record.headers, f"{where} headers", exact=True)
    for name, want in (expected.get("after_schema") or {}).items():
        field = record.value_schema.field("after").schema.field(name)
        got = None if field is None else field.schema.to_json()
        out += differences(want, got, f"{where} schema of after.{name}")
    return out


def _expect(run: ScenarioRun, arg: Any) -> None:
    spec = arg if isinstance(arg, dict) else {"records": arg}
    records = run.take(len(spec["records"]), float(spec.get("timeout", 30)))
    problems = [d for want, got in zip(spec["records"], records) for d in check_record(run, want, got)]
    for name in spec.get("same_source", []):
        values = {repr(r.value["source"][name]) for r in records if r.value is not None}
        if len(values) != 1:
            problems.append(f"source.{name} differs between the records: {sorted(values)}")
    assert not problems, "\n".join(problems)


def _expect_count(run: ScenarioRun, arg: dict[str, Any]) -> None:
    records = run.take(int(arg["count"]), float(arg.get("timeout", 30)))
    if "op" in arg:
        ops = {r.value.get("op") if r.value else None for r in records}
        assert ops == {arg["op"]}, f"ops {ops} != {{{arg['op']!r}}}"


def _expect_distinct_keys(run: ScenarioRun, arg: dict[str, Any]) -> None:
    """Records arrive until the one keyed ``last``; at least ``at_least`` distinct keys, all of ``op``."""
    deadline = time.monotonic() + float(arg.get("timeout", 30))
    last = arg["last"]
    while time.monotonic() < deadline and not any(r.key == last for r in run.records[run.seen:]):
        assert run.thread is not None and run.thread.is_alive(), f"the connector stopped: {run.error}"
        time.sleep(0.02)
    got = run.records[run.seen:]
    run.seen = len(run.records)
    assert any(r.key == last for r in got), f"no record keyed {last}"
    assert {r.value.get("op") for r in got if r.value} == {arg["op"]}
    keys = {repr(r.key) for r in got}
    assert len(keys) >= int(arg["at_least"]), f"{len(keys)} distinct keys, expected at least {arg['at_least']}"


def _nothing_more(run: ScenarioRun, arg: Any) -> None:
    time.sleep(float(arg or 0.5))
    extra = run.records[run.seen:]
    assert not extra, f"unexpected records: {[brief(r) for r in extra]}"


def _fails(run: ScenarioRun, arg: Any) -> None:
    """The connector stops by itself with an error whose message contains every given text."""
    assert run.thread is not None
    run.thread.join(30)
    assert not run.thread.is_alive(), "the connector kept running"
    assert run.error is not None, "the connector stopped without an error"
    message = str(run.error)
    for text in arg if isinstance(arg, list) else [arg]:
        assert text in message, f"{text!r} is not in the error: {message}"
    run.engine = None


def _exits(run: ScenarioRun, arg: Any) -> None:
    """The connector ends by itself without an error (``initial_only``)."""
    assert run.thread is not None
    run.thread.join(30)
    assert not run.thread.is_alive(), "the connector did not stop by itself"
    assert run.error is None, f"the connector failed: {run.error}"
    run.engine = None


def _metrics(run: ScenarioRun, arg: dict[str, Any]) -> None:
    assert run.engine is not None, "metrics need a running (or just stopped) engine"
    deadline = time.monotonic() + 10
    while True:
        problems = differences(arg, run.engine.metrics.values(), "metrics")
        if not problems or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert not problems, "\n".join(problems)


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


def _sql(run: ScenarioRun, arg: Any) -> None:
    with run.server.connect(run.db) as conn, conn.cursor() as cur:
        for statement in arg if isinstance(arg, list) else [arg]:
            cur.execute(statement)


def _wait(run: ScenarioRun, arg: Any) -> None:
    time.sleep(float(arg))


def _streaming(run: ScenarioRun, arg: Any) -> None:
    """Wait until the snapshot is over and the connector streams (``start`` returns once either runs)."""
    assert run.engine is not None and run.thread is not None, "streaming needs a started engine"
    deadline = time.monotonic() + 30
    while not run.engine.metrics.streaming.connected:
        assert run.thread.is_alive(), f"the connector ended before streaming: {run.error}"
        assert time.monotonic() < deadline, "the connector did not start streaming within 30 s"
        time.sleep(0.01)


def _forget(run: ScenarioRun, arg: Any) -> None:
    """Drop the records received so far that no step looked at."""
    run.seen = len(run.records)


def _query(run: ScenarioRun, arg: dict[str, Any]) -> None:
    """A query on the server returns at least ``at_least`` rows (within a few seconds)."""
    deadline = time.monotonic() + 10
    while True:
        rows = run.server.execute(arg["sql"], database=run.db) or []
        if len(rows) >= int(arg.get("at_least", 1)) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert len(rows) >= int(arg.get("at_least", 1)), f"{arg['sql']} returned {rows}"


#: Step name -> what it does with the step's argument.
STEPS: dict[str, Callable[[ScenarioRun, Any], None]] = {
    "start": lambda run, arg: run.start(arg),
    "stop": lambda run, arg: run.stop(),
    "restart": lambda run, arg: (run.stop(), run.start(arg)),
    "sql": _sql,
    "expect": _expect,
    "expect_count": _expect_count,
    "expect_distinct_keys": _expect_distinct_keys,
    "nothing_more": _nothing_more,
    "fails": _fails,
    "exits": _exits,
    "metrics": _metrics,
    "history": _history,
    "purge_binlogs": _purge_binlogs,
    "lose_history": _lose_history,
    "wait": _wait,
    "streaming": _streaming,
    "forget": _forget,
    "query": _query,
}


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


def run_scenario(scenario: dict[str, Any], server: Any, db: str) -> None:
    """Play one scenario against the server, in database ``db``."""
    run = ScenarioRun(server, db, scenario)
    _sql(run, run.scenario.get("setup", []))
    undo = _unparseable(run.scenario["unparseable_ddl"]) if run.scenario.get("unparseable_ddl") else lambda: None
    try:
        for step in run.scenario["steps"]:
            (kind, arg), = step.items() if isinstance(step, dict) else ((step, None),)
            if kind not in STEPS:
                raise ValueError(f"unknown step {kind!r} in scenario {scenario['id']}")
            STEPS[kind](run, arg)
    finally:
        run.stop()
        undo()
        for (name,) in server.execute(f"SHOW DATABASES LIKE '{db}\\_%'") or []:
            server.execute(f"DROP DATABASE `{name}`")
