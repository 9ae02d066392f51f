"""Type mapping end to end: real MariaDB, the in-process Engine, the snapshot, binlog and DDL paths.

Driven by ``tests/data/mariadb_types.yaml``. Per mode set (one database, one connector run) each
family's rows are inserted before the connector starts (the snapshot reads them through the text
protocol, op ``r``), again under new ids once it streams (binlog row images, op ``c``), and into a
copy of the table created while it streams (decoded with the DDL parser's definition, op ``c``).
The tests check that every path gives the documented Connect schema and JSON value of every field
under the mode set's handling modes, and that the paths agree.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from cdc_core.events import ChangeRecord
from mariadb_cdc import EngineThread, connector_config, count_ops

DATA = yaml.safe_load((Path(__file__).parent / "data" / "mariadb_types.yaml").read_text(encoding="utf-8"))
STREAM_ID_OFFSET = 1000
MODE_DEFAULTS = {
    "bigint.unsigned.handling.mode": "long",
    "decimal.handling.mode": "precise",
    "binary.handling.mode": "bytes",
    "time.precision.mode": "adaptive_time_microseconds",
    "enable.time.adjuster": "true",
    "converters": "",
}
#: Paths: (op, table suffix, id offset).
PATHS = {"snapshot": ("r", "", 0), "binlog": ("c", "", STREAM_ID_OFFSET), "ddl": ("c", "_ddl", 0)}
SESSION = ["SET time_zone = '-07:00'"]


# --------------------------------------------------------------------------- the data file


@dataclass
class ColumnCase:
    """One column under one mode set: its DDL type, inputs, and expected schema and values per path."""

    name: str
    type: str
    inputs: list[str]
    schema: dict[str, Any]
    expected: list[Any]
    ddl_schema: dict[str, Any]
    ddl_expected: list[Any]
    #: The snapshot's values where Debezium's snapshot writes them otherwise than its binlog reader.
    snapshot_expected: list[Any] | None = None

    @property
    def optional(self) -> bool:
        """True unless the column is declared NOT NULL."""
        return "NOT NULL" not in self.type.upper()


@dataclass
class FamilyCase:
    """One table under one mode set."""

    name: str
    columns: list[ColumnCase]
    rows: int = field(init=False)

    def __post_init__(self) -> None:
        self.rows = max(len(c.inputs) for c in self.columns)
        for c in self.columns:
            if not c.optional and len(c.inputs) < self.rows:
                raise ValueError(f"{self.name}.{c.name} is NOT NULL but has fewer values than the table has rows")

    def inputs(self, row: int) -> list[str]:
        """The SQL expressions of one row (NULL past a column's list)."""
        return [c.inputs[row] if row < len(c.inputs) else "NULL" for c in self.columns]


def _modes(mode_set: str) -> dict[str, str]:
    return {**MODE_DEFAULTS, **{k: str(v) for k, v in DATA["mode_sets"][mode_set]["config"].items()}}


def _column_case(spec: dict[str, Any], modes: dict[str, str]) -> ColumnCase:
    inputs = spec["inputs"] if "inputs" in spec else [v[0] for v in spec["values"]]
    schema = spec.get("schema")
    expected = [v[1] for v in spec["values"]] if "values" in spec else None
    for prop, by_value in spec.get("by_mode", {}).items():
        entry = by_value.get(modes.get(prop, ""))
        if entry is None:
            raise ValueError(f"column {spec['column']} has no by_mode entry for {prop}={modes.get(prop)!r}")
        schema = entry.get("schema", schema)
        expected = entry.get("values", expected)
    if schema is None or expected is None:
        raise ValueError(f"column {spec['column']} has no schema or values for modes {modes}")
    if len(expected) != len(inputs):
        raise ValueError(f"column {spec['column']}: {len(inputs)} inputs but {len(expected)} expected values")
    ddl = spec.get("ddl", {})
    return ColumnCase(spec["column"], spec["type"], inputs, schema, expected, ddl.get("schema", schema),
                      ddl.get("values", expected), spec.get("snapshot", {}).get("values"))


def _families(mode_set: str) -> dict[str, FamilyCase]:
    modes = _modes(mode_set)
    out = {}
    for name, spec in DATA["families"].items():
        if any(modes[prop] not in allowed for prop, allowed in spec.get("only", {}).items()):
            continue
        out[name] = FamilyCase(name, [_column_case(c, modes) for c in spec["columns"]])
    return out


def _params() -> list[Any]:
    return [pytest.param(mode_set, family, id=f"{mode_set}-{family}")
            for mode_set in DATA["mode_sets"] for family in _families(mode_set)]


# --------------------------------------------------------------------------- running the connector


@dataclass
class Run:
    """What one connector run captured: per table, records by op and id."""

    families: dict[str, FamilyCase]
    records: dict[str, dict[str, dict[int, ChangeRecord]]]


def _create_table(cur: Any, fam: FamilyCase, suffix: str) -> None:
    columns = ", ".join(f"`{c.name}` {c.type}" for c in fam.columns)
    cur.execute(f"CREATE TABLE `{fam.name}{suffix}` (id INT PRIMARY KEY, {columns})")


def _insert_rows(cur: Any, fam: FamilyCase, suffix: str, id_offset: int) -> None:
    names = ", ".join(["id"] + [f"`{c.name}`" for c in fam.columns])
    rows = ", ".join(f"({id_offset + i + 1}, {', '.join(fam.inputs(i))})" for i in range(fam.rows))
    cur.execute(f"INSERT INTO `{fam.name}{suffix}` ({names}) VALUES {rows}")


def _group(records: list[ChangeRecord]) -> dict[str, dict[str, dict[int, ChangeRecord]]]:
    out: dict[str, dict[str, dict[int, ChangeRecord]]] = {}
    for r in records:
        if r.value is None or "op" not in r.value:
            continue
        table = r.topic.rsplit(".", 1)[-1]
        out.setdefault(table, {}).setdefault(r.value["op"], {})[r.value["after"]["id"]] = r
    return out


def _run_mode_set(server: Any, mode_set: str, db: str) -> Run:
    families = _families(mode_set)
    total = sum(f.rows for f in families.values())
    config = connector_config(server, db, **DATA["mode_sets"][mode_set]["config"])
    with server.connect(db) as conn, conn.cursor() as cur:
        for statement in SESSION:
            cur.execute(statement)
        for fam in families.values():
            _create_table(cur, fam, "")
            _insert_rows(cur, fam, "", 0)
        engine = EngineThread(config).start()
        try:
            engine.wait(lambda rs: count_ops(rs, "r") >= total, f"{total} snapshot records")
            for fam in families.values():
                _insert_rows(cur, fam, "", STREAM_ID_OFFSET)
                _create_table(cur, fam, "_ddl")
                _insert_rows(cur, fam, "_ddl", 0)
            engine.wait(lambda rs: count_ops(rs, "c") >= 2 * total, f"{2 * total} streamed records")
        finally:
            engine.stop()
    if engine.error is not None:
        raise engine.error
    records = engine.snapshot()
    assert count_ops(records, "r") == total and count_ops(records, "c") == 2 * total, "duplicate or unexpected records"
    return Run(families, _group(records))


@pytest.fixture(scope="module")
def run_for(mariadb_server) -> Any:
    """``run_for(mode_set)``: the mode set's connector run, made once per module; databases dropped afterwards."""
    runs: dict[str, Run | BaseException] = {}
    databases: list[str] = []

    def get(mode_set: str) -> Run:
        if mode_set not in runs:
            db = f"types_{uuid.uuid4().hex[:12]}"
            mariadb_server.create_database(db)
            databases.append(db)
            try:
                runs[mode_set] = _run_mode_set(mariadb_server, mode_set, db)
            except BaseException as e:
                runs[mode_set] = e
                raise
        found = runs[mode_set]
        if isinstance(found, BaseException):
            pytest.fail(f"the connector run for mode set {mode_set} failed: {found!r}")
        return found

    yield get
    for db in databases:
        if mariadb_server.running:
            mariadb_server.execute(f"DROP DATABASE IF EXISTS `{db}`")


def _dump(value: Any) -> bytes:
    return orjson.dumps(value)


def _record(run: Run, family: str, path: str, row: int) -> ChangeRecord:
    op, suffix, offset = PATHS[path]
    return run.records[family + suffix][op][offset + row + 1]


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize(("mode_set", "family"), _params())
def test_documented_schema_and_values(run_for, mode_set: str, family: str) -> None:
    """Each field's Connect schema and JSON value are Debezium 2.7's, on the snapshot, binlog and DDL paths."""
    run = run_for(mode_set)
    fam = run.families[family]
    problems = []
    for path in PATHS:
        first = _record(run, family, path, 0)
        after_schema = first.value_schema.field("after").schema
        assert after_schema.field_names == ("id", *[c.name for c in fam.columns]), path
        for c in fam.columns:
            got = dict(after_schema.field(c.name).schema.to_json())
            want = {**(c.ddl_schema if path == "ddl" else c.schema), "optional": c.optional}
            if got != want:
                problems.append(f"[{path}] schema of {c.name} ({c.type}): {got} != expected {want}")
        for row in range(fam.rows):
            record = _record(run, family, path, row)
            assert record.value["before"] is None
            after = record.value["after"]
            for i, c in enumerate(fam.columns):
                values = c.ddl_expected if path == "ddl" else c.expected
                if path == "snapshot" and c.snapshot_expected is not None:
                    values = c.snapshot_expected
                expected = values[row] if row < len(values) else None
                if _dump(after[c.name]) != _dump(expected):
                    problems.append(f"[{path}] {c.name} ({c.type}) input {fam.inputs(row)[i]}: "
                                    f"{_dump(after[c.name]).decode()} != expected {_dump(expected).decode()}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("mode_set", list(DATA["mode_sets"]))
def test_snapshot_and_binlog_agree(run_for, mode_set: str) -> None:
    """The same stored row gives byte-identical ``after`` values and schemas from the snapshot and the binlog."""
    run = run_for(mode_set)
    problems = []
    for family, fam in run.families.items():
        for row in range(fam.rows):
            snap, stream = _record(run, family, "snapshot", row), _record(run, family, "binlog", row)
            a, b = dict(snap.value["after"]), dict(stream.value["after"])
            for name in ["id", *(c.name for c in fam.columns if c.snapshot_expected is not None)]:
                a.pop(name), b.pop(name)  # the id differs; `snapshot:` columns are documented to differ
            if _dump(a) != _dump(b):
                problems.append(f"{family} row {row + 1}: snapshot {a} != binlog {b}")
        snap_schema = _record(run, family, "snapshot", 0).value_schema.field("after").schema.to_json()
        stream_schema = _record(run, family, "binlog", 0).value_schema.field("after").schema.to_json()
        if snap_schema != stream_schema:
            problems.append(f"{family}: the snapshot and binlog schemas differ")
    assert not problems, "\n".join(problems)
