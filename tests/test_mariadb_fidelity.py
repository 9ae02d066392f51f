"""Schema change events, tableChanges, column schemas and values as Debezium writes them, on the real MariaDB.

Driven by ``tests/data/mariadb_fidelity.yaml`` (expectations taken from Debezium's MySQL connector
capturing the same statements): one connector run with the file's configuration, statements before
the snapshot and while streaming, then the schema change topic, the tableChanges columns and the
row events' schemas and values are checked.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from cdc_core.events import ChangeRecord
from mariadb_cdc import EngineThread, connector_config

DATA = yaml.safe_load((Path(__file__).parent / "data" / "mariadb_fidelity.yaml").read_text(encoding="utf-8"))
#: The core's JSON writer may name FLOAT32/FLOAT64 either way; compare by Connect type.
_FLOATS = {"float32": "float", "float64": "double"}


def _fill(value: Any, db: str) -> Any:
    if isinstance(value, str):
        return value.replace("{db}", db)
    if isinstance(value, list):
        return [_fill(v, db) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, db) for k, v in value.items()}
    return value


def _normal(schema: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in schema.items() if k not in ("optional", "field")}
    out["type"] = _FLOATS.get(out["type"], out["type"])
    return out


@pytest.fixture(scope="module")
def run(mariadb_server) -> Any:
    """The connector's records for the file's statements, and the database name."""
    db = f"fid_{uuid.uuid4().hex[:10]}"
    mariadb_server.create_database(db)
    data = _fill(DATA, db)
    try:
        with mariadb_server.connect(db) as conn, conn.cursor() as cur:
            for statement in data["setup"]:
                cur.execute(statement)
            engine = EngineThread(connector_config(mariadb_server, db, **data["config"])).start()
            try:
                engine.wait(lambda rs: sum(1 for r in rs if r.value and r.value.get("op") == "r") >= 1, "the snapshot")
                for statement in data["stream"]:
                    cur.execute(statement)
                engine.wait(lambda rs: any(r.value and r.value.get("op") == "c" and r.value["after"]["id"] == 3
                                           for r in rs), "the last insert")
            finally:
                engine.stop()
        if engine.error is not None:
            raise engine.error
        records = engine.snapshot()
        # Only this database's statements (the session server may hold other tests' databases).
        yield db, data, records
    finally:
        if mariadb_server.running:
            mariadb_server.execute(f"DROP DATABASE IF EXISTS `{db}`")  # f1 goes with it


def _schema_changes(records: list[ChangeRecord], db: str) -> list[ChangeRecord]:
    return [r for r in records if r.topic == "dbserver1" and r.value["databaseName"] in (db, "")]


def test_schema_change_topic(run, mariadb_server) -> None:
    """The snapshot's SET / DROP TABLE / DROP, CREATE DATABASE / USE / CREATE TABLE events, then TRUNCATE and CREATE FUNCTION."""
    db, data, records = run
    got = []
    for r in _schema_changes(records, db):
        v = r.value
        if v["databaseName"] == "" and not v["ddl"].startswith("SET character_set_server"):
            continue
        src = v["source"]
        got.append([v["ddl"], v["databaseName"], src["table"], src["snapshot"], src["server_id"],
                    [c["type"] for c in v["tableChanges"]]])
        assert r.key == {"databaseName": v["databaseName"]}
    # Other tests' databases on the shared server appear in the snapshot too (Debezium records every
    # database's tables): keep the events of this test's database and the server-wide SET.
    want = data["schema_changes"]
    mine = [g for g in got if g[1] == db or g[0].startswith("SET character_set_server")]
    assert len(mine) == len(want), "\n".join(json.dumps(g)[:150] for g in mine)
    server_id = next(g[4] for g in mine if g[3] == "false")
    assert server_id != 0
    for g, w in zip(mine, want):
        assert g[0].startswith(w[0]), (g, w)
        # Several tables: Debezium joins them in Java HashSet order, which depends on the database
        # name (packages/cdc-mysql/tests/test_java_order.py checks the order); compared as a set here.
        names = [sorted(x.split(",")) if isinstance(x, str) and "," in x else x for x in (g[2], w[2])]
        assert [g[1], names[0], g[3]] == [w[1], names[1], w[3]], (g, w)
        assert g[4] == (server_id if w[4] == "server" else w[4]), (g, w)
        assert g[5] == w[5], (g, w)


def test_schema_change_value_schema(run) -> None:
    """``ts_ms`` is required, ``tableChanges[].table`` optional, and the table has no ``attributes``."""
    db, _, records = run
    schema = _schema_changes(records, db)[0].value_schema
    assert schema.field("ts_ms").schema.optional is False
    table = schema.field("tableChanges").schema.items.field("table").schema
    assert table.optional is True
    assert table.field_names == ("defaultCharsetName", "primaryKeyColumnNames", "columns", "comment")


def test_table_changes_columns(run) -> None:
    """typeName, jdbcType, lengths, defaults, enum values and comments of the tableChanges columns."""
    db, data, records = run
    last: dict[str, dict[str, Any]] = {}
    for r in _schema_changes(records, db):
        for change in r.value["tableChanges"]:
            if change["table"] is not None:
                last[change["id"].split(".")[-1].strip('"')] = {c["name"]: c for c in change["table"]["columns"]}
    problems = []
    for table, columns in data["table_changes"].items():
        for column, fields in columns.items():
            got = last[table][column]
            for key, want in fields.items():
                if got.get(key) != want:
                    problems.append(f"{table}.{column}.{key}: {got.get(key)!r} != {want!r}")
    assert not problems, "\n".join(problems)


def test_row_schemas_and_values(run) -> None:
    """Field schemas (defaults, docs, converter schemas) and values of snapshot and binlog rows."""
    db, data, records = run
    problems = []
    for table, ops in data["rows"].items():
        for op, columns in ops.items():
            found = [r for r in records if r.topic == f"dbserver1.{db}.{table}" and r.value and r.value["op"] == op]
            assert found, f"no {op} event of {table}"
            record = found[0]
            after = record.value_schema.field("after").schema
            for column, (schema, value) in columns.items():
                got = _normal(after.field(column).schema.to_json())
                if got != _normal(schema):
                    problems.append(f"{table} {op} {column} schema: {got} != {_normal(schema)}")
                if value != "any" and orjson.dumps(record.value["after"][column]) != orjson.dumps(value):
                    problems.append(f"{table} {op} {column}: {record.value['after'][column]!r} != {value!r}")
            if op == "r":
                assert record.value["source"]["server_id"] == 0, "snapshot reads carry server_id 0"
    assert not problems, "\n".join(problems)


def test_key_fields_untouched_by_column_mappers(run) -> None:
    """column.propagate.source.type changes the value's field, not the key's (TableSchemaBuilder adds key fields without mappers)."""
    db, _, records = run
    record = next(r for r in records if r.topic == f"dbserver1.{db}.t1" and r.value and r.value["op"] == "r")
    assert record.key_schema.field("id").schema.to_json() == {"type": "int32", "optional": False}
    assert record.value_schema.field("after").schema.field("id").schema.parameters
