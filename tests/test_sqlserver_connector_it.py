"""Debezium 2.7.4's SqlServerConnectorIT expectations (tests/data/sqlserver_connector_it.yaml) on the stand-in.

Tombstones, updates and key changes, masking/hashing/truncation with short and long table names,
message.key.columns, keyless tables, table schemas with defaults, datatype.propagate.source.type and
skipped.operations: each case is one Debezium test's tables, configuration, statements and expected events.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kit.engine import EngineThread

from cdc_sqlserver.standin.testing import standin  # noqa: F401  (fixture)

DATA = yaml.safe_load((Path(__file__).parent / "data" / "sqlserver_connector_it.yaml").read_text())
BEFORE = ["CREATE TABLE dbo.tablea (id int primary key, cola varchar(30))",
          "CREATE TABLE dbo.tableb (id int primary key, colb varchar(30))"]


def _fill(value, db):
    if isinstance(value, str):
        return value.replace("{db}", db)
    if isinstance(value, dict):
        return {_fill(k, db): _fill(v, db) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, db) for v in value]
    return value


def _table(topic: str) -> str:
    """The events' key in the data: the table's name, ``schema.table`` outside dbo."""
    _, _, schema, table = topic.split(".", 3)
    return table if schema == "dbo" else f"{schema}.{table}"


def _check_event(record, expected, where):
    if "key" in expected:
        assert record.key == expected["key"], (where, "key", record.key)
    if expected.get("tombstone"):
        assert record.value is None, (where, "tombstone", record.value)
        return
    value = record.value
    assert value is not None, (where, "a tombstone where an event was expected")
    if "op" in expected:
        assert value["op"] == expected["op"], (where, "op", value["op"])
    for part in ("before", "after"):
        if part not in expected:
            continue
        if expected[part] is None:
            assert value[part] is None, (where, part, value[part])
        else:
            got = {k: value[part][k] for k in expected[part]} if value[part] is not None else None
            assert got == expected[part], (where, part, value[part])
    for k, v in (expected.get("source") or {}).items():
        assert value["source"][k] == v, (where, "source", k, value["source"][k])


def _check_schemas(record, expected, where):
    if "key" in expected:
        key = expected["key"]
        if key is None:
            assert record.key_schema is None and record.key is None, (where, "key schema", record.key_schema)
        else:
            schema = record.key_schema
            assert schema.name == key["name"], (where, "key schema name", schema.name)
            assert {f.name: f.schema.type for f in schema.fields} == key["fields"], (where, "key fields")
            if "optional" in key:
                assert schema.optional is key["optional"], (where, "key optional")
    after = record.value_schema.field("after").schema
    if "after_fields" in expected:
        assert [f.name for f in after.fields] == expected["after_fields"], (where, "value fields")
    if "after_name" in expected:
        assert after.name == expected["after_name"], (where, "value schema name", after.name)
    for column, field_expected in (expected.get("after") or {}).items():
        field = after.field(column).schema
        rendered = field.to_json()
        for prop, want in field_expected.items():
            if prop == "parameters":
                if want is None:
                    assert not field.parameters, (where, column, "parameters", field.parameters)
                else:
                    got = {k: (field.parameters or {}).get(k) for k in want}
                    assert got == want, (where, column, "parameters", field.parameters)
            elif prop == "name":
                assert field.name == want, (where, column, "name", field.name)
            elif prop == "type":
                assert rendered["type"] == want, (where, column, "type", rendered["type"])
            else:
                assert rendered.get(prop, None if prop != "optional" else False) == want, (where, column, prop, rendered)


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["name"] for c in DATA["cases"]])
def test_sqlserver_connector_it(standin, case):
    case = _fill(case, standin.dbname)
    for schema in case.get("schemas_created", []):
        standin.execute(f"CREATE SCHEMA {schema}")
    for ddl in BEFORE + case.get("tables", []):
        standin.create_table(ddl)
    standin.execute("INSERT INTO dbo.tablea VALUES (1, 'a')")
    if case.get("before"):
        standin.execute(case["before"])
    standin.enable_db()
    def qualified(ddl):
        return tuple(ddl.split()[2].split("(")[0].partition(".")[::2])

    names = [qualified(ddl) for ddl in BEFORE]
    if "table_names" in case:
        names += [("dbo", n) for n in case["table_names"]]
    else:
        names += [qualified(ddl) for ddl in case.get("tables", [])]
    for schema, name in names:
        standin.enable_table(schema, name, columns=(case.get("captured") or {}).get(name))
    standin.agent.start()
    runner = EngineThread(standin.properties(**case.get("config", {}))).start()
    prefix = "server1."

    def data(records):
        return [r for r in records if r.topic.startswith(prefix) and r.topic.count(".") == 3]

    seen = 0
    try:
        for n, step in enumerate(case["steps"]):
            if step.get("sql"):
                runner.wait_streaming()
                standin.execute(step["sql"])
            count = sum(len(events) for events in step["expect"].values())
            runner.wait(lambda rs, want=seen + count: len(data(rs)) >= want, f"step {n}'s {count} events")
            got = data(runner.snapshot())[seen:seen + count]
            seen += count
            for table, events in step["expect"].items():
                mine = [r for r in got if _table(r.topic) == table]
                assert len(mine) == len(events), (case["name"], n, table, [(r.value or {}).get("op") for r in mine])
                for i, (record, expected) in enumerate(zip(mine, events)):
                    _check_event(record, expected, (case["name"], n, table, i))
    finally:
        runner.stop()
    for table, expected in (case.get("schemas") or {}).items():
        first = next(r for r in data(runner.records) if _table(r.topic) == table and r.value is not None)
        _check_schemas(first, expected, (case["name"], table))
    assert len(data(runner.records)) == seen, [(r.topic, (r.value or {}).get("op")) for r in data(runner.records)[seen:]]
