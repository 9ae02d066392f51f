"""Alias-typed columns (``CREATE TYPE Name FROM nvarchar(50)``) as Debezium 2.7.4 gives them (tests/data/sqlserver_alias_types.yaml).

The base type's schema and values, the alias's name as the column's type (schema history, source type
parameters), no schema default (SqlServerDefaultValueConverter has no mapper for the alias's name); the
structure recorded in the schema history converts values the same way after a restart. On the stand-in.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from cdc_core.config import Config
from cdc_sqlserver import odbc
from cdc_sqlserver.catalog import read_tables
from cdc_sqlserver.schema_history import column_info, column_json
from cdc_sqlserver.standin.testing import standin  # noqa: F401  (fixture)
from cdc_sqlserver.types import TypeModes, mapping

from test_sqlserver_types_data import snapshot_then_insert

DATA = yaml.safe_load((Path(__file__).parent / "data" / "sqlserver_alias_types.yaml").read_text())
COLUMNS = DATA["columns"]


def _create(standin):
    for t in DATA["types"]:
        standin.create_type(t["name"], t["base"])
    ddl = ", ".join(f"{c['column']} {c['type']}" for c in COLUMNS)
    standin.create_table(f"CREATE TABLE dbo.aliased (id INT NOT NULL PRIMARY KEY, {ddl})")


def test_alias_typed_columns_in_snapshot_and_stream(standin):
    _create(standin)
    names = ", ".join(c["column"] for c in COLUMNS)
    values = ", ".join(c["insert"] for c in COLUMNS)
    standin.execute(f"INSERT INTO dbo.aliased (id, {names}) VALUES (1, {values})")
    standin.enable_db()
    standin.enable_table("dbo", "aliased")
    standin.agent.start()
    snap, streamed = snapshot_then_insert(standin, standin.properties(**{"column.propagate.source.type": ".*"}),
                                          "aliased", f"INSERT INTO dbo.aliased (id, {names}) VALUES (2, {values})")
    fields = {f.name: f.schema for f in snap.value_schema.field("after").schema.fields}
    for record in (snap, streamed):
        assert {c["column"]: record.value["after"][c["column"]] for c in COLUMNS} == \
            {c["column"]: c["expected"] for c in COLUMNS}
    for c in COLUMNS:
        field = fields[c["column"]]
        rendered = field.to_json()
        assert (rendered["type"], field.name) == (c["schema"]["type"], c["schema"]["name"]), c["column"]
        assert "default" not in rendered, f"{c['column']}: Debezium has no default mapper for an alias type"
        own = {k: v for k, v in (field.parameters or {}).items() if not k.startswith("__debezium.")}
        assert own == c["schema"].get("parameters", {}), c["column"]
        for key, value in (c.get("source") or {}).items():
            assert (field.parameters or {}).get(f"__debezium.source.column.{key}") == value, (c["column"], key)


def test_alias_typed_columns_in_the_schema_history(standin):
    _create(standin)
    conn = odbc.connect(Config(standin.properties()), standin.dbname)
    try:
        table = read_tables(conn, standin.dbname, TypeModes())[("dbo", "aliased")]
    finally:
        conn.close()
    by_name = {col.name: col for col in table.columns}
    for c in COLUMNS:
        doc = column_json(by_name[c["column"]])
        assert {k: doc[k] for k in c["history"]} == c["history"], c["column"]
        # Rebuilt from the history (a restart): the same schema as from the catalog.
        rebuilt, _ = mapping(column_info(doc), TypeModes())
        live, _ = mapping(by_name[c["column"]].extra["info"], TypeModes())
        assert rebuilt.to_json() == live.to_json(), c["column"]
