"""Type mapping end to end: real PostgreSQL, the in-process Engine, snapshot and streaming paths.

Driven by ``tests/data/postgres_types.yaml``. Per mode set (one database, one connector run) each
family's rows are inserted before the connector starts, so the snapshot reads them (COPY text
format, op ``r``), and again, with the same values under new ids, once it streams (pgoutput text
values, op ``c``). The tests then check that

* both paths give byte-identical ``after`` values and the same schema, and
* every field has the documented Connect schema (type/name/version/parameters/default/optional)
  and JSON value under that mode set's handling modes, and columns of types Debezium cannot map
  are left out of both.

Each database first gets the data file's extensions (families that need a missing one are
skipped, naming it) and its ``setup`` statements (enum, domain and composite types).

One mode set runs on a database whose own settings (TimeZone, DateStyle, IntervalStyle,
bytea_output, extra_float_digits) would break text parsing if the connector did not pin them on
its snapshot, catalog and replication connections.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest
import yaml
from psycopg import pq, sql

from cdc_core.config import Config
from cdc_core.engine import Engine
from cdc_core.events import ChangeRecord
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_postgres import config as pgc
from cdc_postgres.replication import ReplicationConnection
from cdc_postgres.testing import _drop_database

DATA = yaml.safe_load((Path(__file__).parent / "data" / "postgres_types.yaml").read_text(encoding="utf-8"))
TOPIC_PREFIX = "types"
STREAM_ID_OFFSET = 1000  # streamed copies of row i get id 1000 + i
WAIT_S = 30.0
MODE_DEFAULTS = {
    "decimal.handling.mode": "precise",
    "binary.handling.mode": "bytes",
    "time.precision.mode": "adaptive",
    "hstore.handling.mode": "json",
    "include.unknown.datatypes": "false",
    "interval.handling.mode": "numeric",
}


# --------------------------------------------------------------------------- the data file


@dataclass
class ColumnCase:
    """One column under one mode set: its DDL type, inputs, expected schema fragment and values."""

    name: str
    type: str
    inputs: list[str | None]
    schema: dict[str, Any] | None
    expected: list[Any]

    @property
    def omitted(self) -> bool:
        """True if events leave the column out (a type Debezium cannot map)."""
        return self.schema is None


@dataclass
class FamilyCase:
    """One table under one mode set."""

    name: str
    columns: list[ColumnCase]
    rows: int = field(init=False)

    def __post_init__(self) -> None:
        self.rows = max(len(c.inputs) for c in self.columns)
        for c in self.columns:
            if not _optional(c.type) and len(c.inputs) < self.rows:
                raise ValueError(f"{self.name}.{c.name} is NOT NULL but has fewer values than the table has rows")

    def inputs(self, row: int) -> list[str | None]:
        return [c.inputs[row] if row < len(c.inputs) else None for c in self.columns]

    def expected(self, column: ColumnCase, row: int) -> Any:
        return column.expected[row] if row < len(column.expected) else None


def _optional(sql_type: str) -> bool:
    t = sql_type.lower()
    return "serial" not in t and "not null" not in t


def _mode_config(mode_set: str) -> dict[str, str]:
    return {**MODE_DEFAULTS, **DATA["mode_sets"][mode_set].get("config", {})}


def _column_case(spec: dict[str, Any], modes: dict[str, str]) -> ColumnCase:
    inputs = spec["inputs"] if "inputs" in spec else [v[0] for v in spec["values"]]
    schema = spec.get("schema")
    expected = [v[1] for v in spec["values"]] if "values" in spec else None
    omitted = spec.get("omitted", False)
    for prop, by_value in spec.get("by_mode", {}).items():
        entry = by_value[modes[prop]]
        schema = entry.get("schema", schema)
        expected = entry.get("values", expected)
        omitted = entry.get("omitted", omitted)
    if omitted:
        return ColumnCase(spec["column"], spec["type"], inputs, None, [None] * len(inputs))
    if schema is None or expected is None:
        raise ValueError(f"column {spec['column']} has no schema or values for modes {modes}")
    if len(expected) != len(inputs):
        raise ValueError(f"column {spec['column']}: {len(inputs)} inputs but {len(expected)} expected values")
    return ColumnCase(spec["column"], spec["type"], inputs, schema, expected)


def _families(mode_set: str) -> dict[str, FamilyCase]:
    modes = _mode_config(mode_set)
    out = {}
    for name, spec in DATA["families"].items():
        only = spec.get("only", {})
        if any(modes[prop] not in allowed for prop, allowed in only.items()):
            continue
        out[name] = FamilyCase(name, [_column_case(c, modes) for c in spec["columns"]])
    return out


def _params() -> list[Any]:
    params = []
    for mode_set in DATA["mode_sets"]:
        for family in _families(mode_set):
            marks = []
            xfail = DATA["families"][family].get("xfail")
            if xfail and mode_set in xfail.get("modes", [mode_set]):
                marks.append(pytest.mark.xfail(strict=True, reason=xfail["reason"]))
            params.append(pytest.param(mode_set, family, id=f"{mode_set}-{family}", marks=marks))
    return params


# --------------------------------------------------------------------------- running the connector


@dataclass
class Run:
    """What one connector run captured: per table, records by op and id."""

    dbname: str
    families: dict[str, FamilyCase]
    records: dict[str, dict[str, dict[int, ChangeRecord]]]
    skipped: dict[str, str]


def _connector_config(server, dbname: str, **extra: Any) -> dict[str, Any]:
    return {
        "connector.class": "postgres",
        "topic.prefix": TOPIC_PREFIX,
        "database.hostname": server.host,
        "database.port": server.port,
        "database.user": server.user,
        "database.dbname": dbname,
        "snapshot.mode": "initial",
        "slot.name": f"slot_{dbname}",  # slots are cluster-wide
        "poll.interval.ms": 20,
        "offset.flush.interval.ms": 0,
        **extra,
    }


class EngineThread:
    """``Engine(config).run(handler)`` in a thread; the handler collects every record."""

    def __init__(self, config: dict[str, Any]):
        self.engine = Engine(config, offset_store=MemoryOffsetStore())
        self.records: list[ChangeRecord] = []
        self.error: BaseException | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="types-e2e-engine", daemon=True)

    def _run(self) -> None:
        try:
            self.engine.run(self._handle)
        except BaseException as e:  # reported by wait()/stop()
            self.error = e

    def _handle(self, records: list[ChangeRecord]) -> None:
        with self._lock:
            self.records.extend(records)

    def start(self) -> EngineThread:
        self._thread.start()
        return self

    def snapshot(self) -> list[ChangeRecord]:
        with self._lock:
            return list(self.records)

    def wait(self, done: Callable[[list[ChangeRecord]], bool], what: str, timeout: float = WAIT_S) -> None:
        deadline = time.monotonic() + timeout
        while not done(self.snapshot()):
            if not self._thread.is_alive():
                raise AssertionError(f"the engine stopped before {what}: {self.error!r}") from self.error
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; got {len(self.snapshot())} records")
            time.sleep(0.02)

    def stop(self) -> None:
        self.engine.stop()
        self._thread.join(timeout=WAIT_S)
        assert not self._thread.is_alive(), "the engine did not stop"


def _prepare_database(conn: psycopg.Connection) -> dict[str, str]:
    """Create the data file's extensions and types; returns why each missing extension is missing."""
    available = {row[0] for row in conn.execute("SELECT name FROM pg_catalog.pg_available_extensions")}
    missing = {}
    for ext in DATA.get("extensions", []):
        if ext in available:
            conn.execute(sql.SQL("CREATE EXTENSION IF NOT EXISTS {}").format(sql.Identifier(ext)))
        else:
            missing[ext] = (f"the PostgreSQL extension {ext!r} is not installed on this machine "
                            f"(scripts/bootstrap.sh installs it where Debian packages it)")
    for statement in DATA.get("setup", []):
        conn.execute(statement)
    return missing


def _create_tables(conn: psycopg.Connection, families: dict[str, FamilyCase]) -> None:
    for fam in families.values():
        columns = [sql.SQL("id int PRIMARY KEY")] + [
            sql.SQL("{} {}").format(sql.Identifier(c.name), sql.SQL(c.type)) for c in fam.columns
        ]
        conn.execute(sql.SQL("CREATE TABLE {} ({})").format(sql.Identifier(fam.name), sql.SQL(", ").join(columns)))


def _insert_rows(conn: psycopg.Connection, families: dict[str, FamilyCase], id_offset: int) -> None:
    """Insert every family's rows with ids ``id_offset + 1 ...``; the values go in as text and PostgreSQL casts them."""
    for fam in families.values():
        names = [sql.Identifier("id")] + [sql.Identifier(c.name) for c in fam.columns]
        query = sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(
            sql.Identifier(fam.name),
            sql.SQL(", ").join(names),
            sql.SQL(", ").join(sql.Placeholder() * len(names)),
        )
        with conn.transaction(), conn.cursor() as cur:
            cur.executemany(query, [[id_offset + i + 1, *fam.inputs(i)] for i in range(fam.rows)])


def _count(records: list[ChangeRecord], op: str) -> int:
    return sum(1 for r in records if r.value is not None and r.value["op"] == op)


def _group(records: list[ChangeRecord]) -> dict[str, dict[str, dict[int, ChangeRecord]]]:
    out: dict[str, dict[str, dict[int, ChangeRecord]]] = {}
    for r in records:
        table = r.topic.rsplit(".", 1)[-1]
        by_op = out.setdefault(table, {})
        assert r.value is not None, f"unexpected tombstone {r}"
        row = r.value["after"]
        by_op.setdefault(r.value["op"], {})[row["id"]] = r
    return out


def _new_database(server, settings: dict[str, Any] | None = None) -> str:
    name = f"types_{uuid.uuid4().hex[:12]}"
    server.create_database(name)
    for key, value in (settings or {}).items():
        server.execute(sql.SQL("ALTER DATABASE {} SET {} = {}").format(
            sql.Identifier(name), sql.Identifier(key), sql.Literal(str(value))))
    return name


def _run_mode_set(server, mode_set: str, dbname: str) -> Run:
    spec = DATA["mode_sets"][mode_set]
    families = _families(mode_set)
    with server.connect(dbname) as conn:
        missing = _prepare_database(conn)
        skipped = {}
        for name in list(families):
            for ext in DATA["families"][name].get("requires", []):
                if ext in missing:
                    skipped[name] = missing[ext]
                    del families[name]
                    break
        total = sum(f.rows for f in families.values())
        _create_tables(conn, families)
        _insert_rows(conn, families, 0)
        # Only the families' tables: extensions bring their own (PostGIS's spatial_ref_sys).
        include = ",".join(f"public\\.{name}" for name in families)
        config = _connector_config(server, dbname, **{"table.include.list": include, **spec.get("config", {})})
        engine = EngineThread(config).start()
        try:
            engine.wait(lambda rs: _count(rs, "r") >= total, f"{total} snapshot records")
            _insert_rows(conn, families, STREAM_ID_OFFSET)
            engine.wait(lambda rs: _count(rs, "c") >= total, f"{total} streamed records")
        finally:
            engine.stop()
    if engine.error is not None:
        raise engine.error
    records = engine.snapshot()
    assert _count(records, "r") == total and _count(records, "c") == total, "duplicate or unexpected records"
    return Run(dbname, families, _group(records), skipped)


@pytest.fixture(scope="module")
def run_for(pg_server) -> Any:
    """``run_for(mode_set)``: the mode set's connector run, made once per module; databases dropped afterwards."""
    runs: dict[str, Run | BaseException] = {}
    databases: list[str] = []

    def get(mode_set: str) -> Run:
        if mode_set not in runs:
            dbname = _new_database(pg_server, DATA["mode_sets"][mode_set].get("database_settings"))
            databases.append(dbname)
            try:
                runs[mode_set] = _run_mode_set(pg_server, mode_set, dbname)
            except BaseException as e:
                runs[mode_set] = e
                raise
        found = runs[mode_set]
        if isinstance(found, BaseException):
            pytest.fail(f"the connector run for mode set {mode_set} failed: {found!r}")
        return found

    yield get
    for name in databases:
        if pg_server.running:
            _drop_database(pg_server, name)


def _dump(value: Any) -> bytes:
    return orjson.dumps(value)


def _after_schema(record: ChangeRecord):
    return record.value_schema.field("after").schema


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize(("mode_set", "family"), _params())
def test_snapshot_and_streaming_agree(run_for, mode_set: str, family: str) -> None:
    """The same stored values give the same `after` and schema whether read by COPY or from pgoutput."""
    run = run_for(mode_set)
    if family in run.skipped:
        pytest.skip(run.skipped[family])
    fam = run.families[family]
    by_op = run.records[family]
    ids = range(1, fam.rows + 1)
    assert sorted(by_op["r"]) == list(ids)
    assert sorted(by_op["c"]) == [STREAM_ID_OFFSET + i for i in ids]
    problems = []
    for i in ids:
        snap, stream = by_op["r"][i], by_op["c"][STREAM_ID_OFFSET + i]
        assert snap.value["before"] is None and stream.value["before"] is None
        assert snap.value["source"]["snapshot"] != "false" and stream.value["source"]["snapshot"] == "false"
        a, b = dict(snap.value["after"]), dict(stream.value["after"])
        a.pop("id"), b.pop("id")
        for name in a:
            if _dump(a[name]) != _dump(b[name]):
                problems.append(f"row {i} {name}: snapshot {a[name]!r} != streaming {b[name]!r} "
                                f"(input {fam.inputs(i - 1)[[c.name for c in fam.columns].index(name)]!r})")
        assert list(a) == list(b)
    assert not problems, "\n".join(problems)
    snap_schema = _after_schema(by_op["r"][1]).to_json()
    stream_schema = _after_schema(by_op["c"][STREAM_ID_OFFSET + 1]).to_json()
    assert snap_schema == stream_schema


@pytest.mark.parametrize(("mode_set", "family"), _params())
def test_documented_schema_and_values(run_for, mode_set: str, family: str) -> None:
    """Each field's Connect schema and JSON value are the ones Debezium 2.7 documents for the mode set."""
    run = run_for(mode_set)
    if family in run.skipped:
        pytest.skip(run.skipped[family])
    fam = run.families[family]
    by_op = run.records[family]
    problems = []
    emitted = [c for c in fam.columns if not c.omitted]
    for op, offset in (("r", 0), ("c", STREAM_ID_OFFSET)):
        value_schema = _after_schema(by_op[op][offset + 1])
        assert value_schema.field_names == ("id", *[c.name for c in emitted])
        for c in emitted:
            got = dict(value_schema.field(c.name).schema.to_json())
            want = {**c.schema, "optional": _optional(c.type)}
            if got != want:
                problems.append(f"[{op}] schema of {c.name} ({c.type}): {got} != expected {want}")
        for row in range(fam.rows):
            after = by_op[op][offset + row + 1].value["after"]
            for c in emitted:
                expected = fam.expected(c, row)
                if _dump(after[c.name]) != _dump(expected):
                    problems.append(f"[{op}] {c.name} ({c.type}) input {fam.inputs(row)[fam.columns.index(c)]!r}: "
                                    f"{_dump(after[c.name]).decode()} != expected {_dump(expected).decode()}")
    assert not problems, "\n".join(problems)


def test_connector_sessions_pin_text_output_settings(pg_server, pg_db) -> None:
    """Snapshot/catalog and replication sessions override hostile database settings with what the parsers need."""
    for key, value in DATA["mode_sets"]["hostile-database-settings"]["database_settings"].items():
        pg_server.execute(sql.SQL("ALTER DATABASE {} SET {} = {}").format(
            sql.Identifier(pg_db), sql.Identifier(key), sql.Literal(str(value))))
    config = Config(_connector_config(pg_server, pg_db))
    wanted = {"TimeZone": "UTC", "DateStyle": "ISO, MDY", "IntervalStyle": "postgres", "bytea_output": "hex"}
    with pg_server.connect(pg_db) as plain:  # a session that pins nothing sees the database's settings
        assert plain.execute("SHOW TimeZone").fetchone()[0] == "America/New_York"
    # The connector opens its catalog and snapshot connections with pgc.conninfo(config).
    with psycopg.connect(pgc.conninfo(config), autocommit=True) as conn:
        got = {name: conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(name))).fetchone()[0] for name in wanted}
        assert got == wanted
        assert int(conn.execute("SHOW extra_float_digits").fetchone()[0]) >= 1
    # ... and its replication connection with ReplicationConnection(pgc.conninfo(config)).
    repl = ReplicationConnection(pgc.conninfo(config))
    try:
        got = {}
        for name in [*wanted, "extra_float_digits"]:
            res = repl._command(f'SHOW "{name}"', pq.ExecStatus.TUPLES_OK)  # SHOW is a replication command
            got[name] = res.get_value(0, 0).decode()
        assert int(got.pop("extra_float_digits")) >= 1
        assert got == wanted
    finally:
        repl.close()


def test_snapshot_and_streaming_agree_in_a_latin1_database(pg_server) -> None:
    """Text read from a LATIN1 database: the same characters on both paths (each connection must ask for UTF-8)."""
    dbname = f"types_{uuid.uuid4().hex[:12]}"
    pg_server.execute(sql.SQL("CREATE DATABASE {} ENCODING 'LATIN1' TEMPLATE template0").format(sql.Identifier(dbname)))
    values = {"c_text": "héllo wörld ¿½ ÿ", "c_char": "é    ", "c_json": '{"ü": "ß"}'}
    try:
        with pg_server.connect(dbname) as conn:
            conn.execute("CREATE TABLE latin (id int PRIMARY KEY, c_text text, c_char char(5), c_json json)")
            insert = "INSERT INTO latin VALUES (%s, %s, %s, %s)"
            conn.execute(insert, (1, *values.values()))
            engine = EngineThread(_connector_config(pg_server, dbname)).start()
            try:
                engine.wait(lambda rs: _count(rs, "r") >= 1, "the snapshot")
                conn.execute(insert, (2, *values.values()))
                engine.wait(lambda rs: _count(rs, "c") >= 1, "the streamed insert")
            finally:
                engine.stop()
        afters = {r.value["op"]: r.value["after"] for r in engine.snapshot()}
        assert afters["r"] == {"id": 1, **values}
        assert afters["c"] == {"id": 2, **values}
    finally:
        _drop_database(pg_server, dbname)


def _capture_nan(pg_server, pg_db, path: str, column_type: str, **extra: Any) -> EngineThread:
    """Capture a table whose second row is numeric NaN, read by the snapshot or streamed."""
    with pg_server.connect(pg_db) as conn:
        conn.execute(f"CREATE TABLE prices (id int PRIMARY KEY, amount {column_type})")
        conn.execute("INSERT INTO prices VALUES (1, 1.5)")
        if path == "snapshot":
            conn.execute("INSERT INTO prices VALUES (2, 'NaN'), (3, 2.5)")
        engine = EngineThread(_connector_config(pg_server, pg_db, **extra)).start()
        try:
            engine.wait(lambda rs: _count(rs, "r") >= 1, "the snapshot")
            if path == "streaming":
                conn.execute("INSERT INTO prices VALUES (2, 'NaN'), (3, 2.5)")
            deadline = time.monotonic() + WAIT_S
            while engine.error is None and len(engine.snapshot()) < 3 and time.monotonic() < deadline:
                time.sleep(0.02)
        finally:
            engine.stop()
    return engine


@pytest.mark.parametrize("path", ["snapshot", "streaming"])
def test_numeric_nan_in_precise_mode_is_null_with_a_warning(pg_server, pg_db, path: str, caplog) -> None:
    """decimal.handling.mode=precise cannot carry NaN: Debezium's TableSchemaBuilder writes null and goes on."""
    with caplog.at_level("WARNING"):
        engine = _capture_nan(pg_server, pg_db, path, "numeric(10,2)")
    assert engine.error is None
    amounts = {r.value["after"]["id"]: r.value["after"]["amount"] for r in engine.snapshot()}
    assert amounts == {1: "AJY=", 2: None, 3: "APo="}
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "prices.amount" in r.getMessage()]
    assert warned and "'NaN'" in warned[0] and "decimal.handling.mode=string or double" in warned[0]


@pytest.mark.parametrize(("column_type", "extra"), [
    ("numeric(10,2) NOT NULL", {}),  # a null cannot stand in a required field (Debezium: DataException)
    ("numeric(10,2)", {"event.converting.failure.handling.mode": "fail"}),
])
def test_numeric_nan_in_precise_mode_stops_where_null_cannot_stand(pg_server, pg_db, column_type, extra) -> None:
    """A required column, or event.converting.failure.handling.mode=fail: the run stops, naming column and fix."""
    engine = _capture_nan(pg_server, pg_db, "streaming", column_type, **extra)
    # event.processing.failure.handling.mode=fail (the default) stops with the conversion error as the cause.
    assert engine.error is not None
    assert "amount" in str(engine.error) and "NaN" in str(engine.error)
    assert "decimal.handling.mode=string or double" in str(engine.error)
    assert "public.prices" in str(engine.error)


def test_unknown_type_columns_are_left_out_with_a_warning(pg_server, pg_db, caplog) -> None:
    """Debezium skips columns of types it cannot map and logs a warning naming each one."""
    with pg_server.connect(pg_db) as conn:
        conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text, words tsvector, extent box)")
        conn.execute("INSERT INTO docs VALUES (1, 'a b', 'a b', '(0,0),(1,1)')")
        with caplog.at_level("WARNING"):
            engine = EngineThread(_connector_config(pg_server, pg_db)).start()
            try:
                engine.wait(lambda rs: _count(rs, "r") >= 1, "the snapshot")
                conn.execute("INSERT INTO docs VALUES (2, 'c', 'c', '(0,0),(2,2)')")
                engine.wait(lambda rs: _count(rs, "c") >= 1, "the streamed insert")
            finally:
                engine.stop()
    afters = {r.value["op"]: r.value["after"] for r in engine.snapshot()}
    assert afters == {"r": {"id": 1, "body": "a b"}, "c": {"id": 2, "body": "c"}}
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    for column, type_name in (("words", "tsvector"), ("extent", "box")):
        assert any(f"public.docs.{column}" in m and type_name in m and "left out" in m for m in warned), warned


def test_defaults_fill_not_null_columns_a_delete_does_not_carry(pg_server, pg_db) -> None:
    """With REPLICA IDENTITY DEFAULT a delete carries only the key: other NOT NULL columns get the schema default."""
    with pg_server.connect(pg_db) as conn:
        conn.execute("CREATE TABLE stock (id int PRIMARY KEY, qty int NOT NULL DEFAULT 5, "
                     "label text NOT NULL DEFAULT 'none', created timestamptz NOT NULL DEFAULT now(), "
                     "plain int NOT NULL, note text)")
        conn.execute("INSERT INTO stock VALUES (1, 9, 'x', '2018-01-01 00:00:00+00', 3, 'n')")
        engine = EngineThread(_connector_config(pg_server, pg_db)).start()
        try:
            engine.wait(lambda rs: _count(rs, "r") >= 1, "the snapshot")
            conn.execute("DELETE FROM stock WHERE id = 1")
            engine.wait(lambda rs: _count(rs, "d") >= 1, "the streamed delete")
        finally:
            engine.stop()
    delete = next(r for r in engine.snapshot() if r.value is not None and r.value["op"] == "d")
    # Defaults where the schema has one (a function default: the type's zero), else the type's zero.
    assert delete.value["before"] == {"id": 1, "qty": 5, "label": "none", "created": "1970-01-01T00:00:00.000000Z",
                                      "plain": 0, "note": None}
    fields = {f.name: f.schema.to_json() for f in delete.value_schema.field("before").schema.fields}
    assert fields["qty"] == {"type": "int32", "optional": False, "default": 5}
    assert fields["created"]["default"] == "1970-01-01T00:00:00.000000Z"
