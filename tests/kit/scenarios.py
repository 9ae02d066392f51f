"""Acceptance scenarios as data, for every connector: setup SQL, configuration, steps, expectations.

A scenario file (``ConnectorFixture.scenario_files``) is a list of scenarios::

    - id: AS-04
      title: Insert
      setup: [SQL run before the connector starts]
      config: {connector properties on top of the defaults}
      watch: [topics the expect steps look at; default: the connector's]
      steps:
        - start                         # or start: {properties}
        - sql: INSERT ...               # a statement or a list
        - expect: [record, ...]         # the next records on watched topics, in order
        - nothing_more: 0.5             # no further watched record within that many seconds

Every string may use ``{db}`` (the test's database) and ``{prefix}`` (``topic.prefix``). A topic
is written in full (``P.public.t``: ``P.`` stands for the prefix) or short: a table name
(``<prefix>.<db>.<table>`` on MariaDB), ``schema``, ``transaction`` or ``heartbeat``. A record
expectation holds ``topic``, ``key``, ``tombstone: true``, ``op``, ``before``, ``after``,
``status``, ``event_count``, ``data_collections`` (exact), ``source``/``value``/``transaction``
(subsets), ``headers``, ``key_schema``/``value_schema`` (schema JSON subsets), ``key_fields`` and
``after_schema`` (field name -> subset of its schema JSON). ``<any>``, ``<not null>``, ``<int>``,
``<str>``, ``<gtid>`` and ``<starts TEXT>`` match any such value. The steps are ``STEPS`` below
plus each connector's own (``PostgresScenarioRun.steps``, ``MariaDBScenarioRun.steps``).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import yaml

from cdc_core.config import Config
from cdc_core.engine import Engine
from cdc_core.stores.file_offsets import FileOffsetStore
from cdc_core.stores.memory_history import MemorySchemaHistoryStore
from cdc_core.stores.memory_offsets import MemoryOffsetStore

TESTS = Path(__file__).parent.parent


def load(fx_class: Any) -> list[tuple[str, dict[str, Any]]]:
    """(file stem, scenario) for every scenario of a connector's files, in file order."""
    out = []
    for path in sorted(TESTS.glob(fx_class.scenario_files)):
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
    if isinstance(expected, str) and expected.startswith("<starts ") and expected.endswith(">"):
        ok = isinstance(actual, str) and actual.startswith(expected[8:-1])
        return [] if ok else [f"{path}: expected a string starting {expected[8:-1]!r}, got {actual!r}"]
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


def brief(r: Any) -> str:
    """A record in one line, for messages."""
    op = None if r.value is None else r.value.get("op", r.value.get("status", "schema change"))
    return f"{r.topic} {op} key={r.key}"


class ScenarioRun:
    """One scenario's connector in-process: restartable, its offsets (and schema history) surviving restarts.

    A connector's subclass says how it is configured, what its topics' short names are, which
    records the expect steps look at, and adds its own steps (``steps``).
    """

    #: The ``topic.prefix`` unless the scenario gives ``prefix``.
    prefix: ClassVar[str] = "P"
    #: The connector's own steps: name -> what it does with the step's argument.
    steps: ClassVar[dict[str, Callable[[ScenarioRun, Any], None]]] = {}

    def __init__(self, fx: Any, scenario: dict[str, Any], tmp_path: Path):
        self.fx, self.server, self.db = fx, fx.server, fx.database
        prefix = scenario.get("prefix", self.prefix)
        self.names = {"db": self.db, "prefix": prefix}
        self.scenario = _fill(scenario, self.names)
        self.config = {**self.base_config(prefix), "offset.storage.file.filename": str(tmp_path / "offsets.json"),
                       **{k: str(v) for k, v in (self.scenario.get("config") or {}).items()}}
        self.offsets: Any = MemoryOffsetStore()
        self.history = MemorySchemaHistoryStore()
        self.records: list[Any] = []
        self.seen = 0
        self.engine: Engine | None = None
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self.watch = {self.topic(t) for t in self.scenario.get("watch", [])}
        #: Seconds the handler sleeps per batch (with a small max.queue.size, this holds a snapshot back).
        self.slow_handler = float(self.scenario.get("slow_handler", 0))
        self.cleanups: list[Callable[[], None]] = []

    # -- what a connector's subclass says ---------------------------------------------------------

    def base_config(self, prefix: str) -> dict[str, Any]:
        """The engine configuration of this connector on the test database."""
        raise NotImplementedError

    def topic(self, name: str) -> str:
        """A topic from its full (``P.`` for the prefix) or short form (``schema``, ``transaction``, ``heartbeat``)."""
        prefix = self.names["prefix"]
        if name.startswith("P."):
            return prefix + name[1:]
        return {"schema": prefix, "transaction": f"{prefix}.transaction",
                "heartbeat": f"__debezium-heartbeat.{prefix}"}.get(name, name)

    def watched(self, record: Any) -> bool:
        """True if the expect steps look at this record (the ``watch`` topics if given, else every one)."""
        return not self.watch or record.topic in self.watch

    def ready(self, engine: Engine) -> bool:
        """True once ``start`` may return (the connector connected)."""
        return engine.metrics.streaming.connected

    def sql(self, statements: list[str]) -> None:
        """Run statements on the test database."""
        for statement in statements:
            self.fx.execute(statement)

    def cleanup(self) -> None:
        """Undo what the scenario changed beyond its database."""
        for undo in self.cleanups:
            undo()

    # -- the connector ----------------------------------------------------------------------------

    def start(self, overrides: dict[str, Any] | None = None) -> None:
        """Start the engine (with ``overrides`` on top of the configuration); wait until it is ``ready``."""
        if overrides:
            self.config.update({k: str(v) for k, v in overrides.items()})
        self.error = None
        self.engine = engine = Engine(self.config, offset_store=self.offsets, history_store=self.history)

        def run() -> None:
            try:
                engine.run(self._handle)
            except BaseException as e:  # reported by the steps that wait
                self.error = e

        self.thread = threading.Thread(target=run, daemon=True, name="kit-scenario")
        self.thread.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.thread.is_alive() and not self.ready(engine):
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


# --------------------------------------------------------------------------------- checks


def check_record(run: ScenarioRun, expected: dict[str, Any], record: Any) -> list[str]:
    """Differences between one record and its expectation."""
    where = brief(record)
    out = []
    if "topic" in expected and record.topic != run.topic(expected["topic"]):
        out.append(f"{where}: topic != {run.topic(expected['topic'])}")
    if "key" in expected:
        out += differences(expected["key"], record.key, f"{where} key", exact=True)
    for name in ("key_schema", "value_schema"):
        if name in expected:
            out += differences(expected[name], getattr(record, name).to_json(), f"{where} {name}")
    for name, want in (expected.get("key_fields") or {}).items():
        field = record.key_schema.field(name)
        out += differences(want, None if field is None else field.schema.to_json(), f"{where} key schema of {name}")
    if expected.get("tombstone"):
        return out + ([] if record.value is None else [f"{where}: expected a tombstone"])
    value = record.value
    if value is None:
        return out + [f"{where}: unexpected tombstone"]
    for name in ("op", "before", "after", "status", "event_count", "data_collections"):
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
    records = run.take(int(arg["count"]), float(arg.get("timeout", 60)))
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
    run.thread.join(60)
    assert not run.thread.is_alive(), "the connector kept running"
    assert run.error is not None, "the connector stopped without an error"
    message = str(run.error)
    for text in arg if isinstance(arg, list) else [arg]:
        assert text in message, f"{text!r} is not in the error: {message}"
    run.engine = None


def _start_fails(run: ScenarioRun, arg: Any) -> None:
    """Start, and the connector stops by itself with an error containing the text."""
    run.start()
    _fails(run, arg)


def _exits(run: ScenarioRun, arg: Any) -> None:
    """The connector ends by itself without an error (``initial_only``)."""
    assert run.thread is not None
    run.thread.join(60)
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


def _streaming(run: ScenarioRun, arg: Any) -> None:
    """Wait until the snapshot is over and the connector streams (``start`` may return once a snapshot runs)."""
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
        with run.fx.connect() as conn:
            cur = conn.cursor()
            cur.execute(arg["sql"])
            rows = cur.fetchall()
            conn.commit()
        if len(rows) >= int(arg.get("at_least", 1)) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert len(rows) >= int(arg.get("at_least", 1)), f"{arg['sql']} returned {rows}"


#: Step name -> what it does with the step's argument (every connector's).
STEPS: dict[str, Callable[[ScenarioRun, Any], None]] = {
    "start": lambda run, arg: run.start(arg),
    "stop": lambda run, arg: run.stop(),
    "restart": lambda run, arg: (run.stop(), run.start(arg)),
    "sql": lambda run, arg: run.sql(arg if isinstance(arg, list) else [arg]),
    "expect": _expect,
    "expect_count": _expect_count,
    "expect_distinct_keys": _expect_distinct_keys,
    "nothing_more": _nothing_more,
    "fails": _fails,
    "start_fails": _start_fails,
    "exits": _exits,
    "metrics": _metrics,
    "wait": lambda run, arg: time.sleep(float(arg)),
    "streaming": _streaming,
    "forget": _forget,
    "query": _query,
}


def run_scenario(run: ScenarioRun) -> None:
    """Play one scenario: its setup SQL, then its steps in order; the connector stopped and cleaned up after."""
    run.sql(run.scenario.get("setup", []))
    try:
        for step in run.scenario["steps"]:
            (kind, arg), = step.items() if isinstance(step, dict) else ((step, None),)
            action = run.steps.get(kind) or STEPS.get(kind)
            if action is None:
                raise ValueError(f"unknown step {kind!r} in scenario {run.scenario['id']}")
            action(run, arg)
    finally:
        run.stop()
        run.cleanup()


class FileOffsetsRun(ScenarioRun):
    """A run whose offsets go to ``offset.storage.file.filename`` (as ``cdc run`` keeps them)."""

    def start(self, overrides: dict[str, Any] | None = None) -> None:
        """Start on the offsets file (read again at each start, as after a process restart)."""
        self.offsets = FileOffsetStore(Config({**self.config, **{k: str(v) for k, v in (overrides or {}).items()}}))
        super().start(overrides)
