"""DDL as data: scripts applied to an empty model must leave exactly the expected tables."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cdc_mysql.ddl_cli import apply_script
from cdc_mysql.model import ColumnDef, TableDef

CASES = yaml.safe_load((Path(__file__).parent / "data" / "ddl_cases.yaml").read_text())


def describe(c: ColumnDef) -> str:
    """The one-line form the fixture file uses."""
    out = c.name + " " + (c.declared or c.type_name)
    if c.type_name in ("ENUM", "SET"):
        out += f"({c.length})"
    elif c.length is not None:
        out += f"({c.length}" + (f",{c.scale})" if c.scale is not None else ")")
    if c.unsigned:
        out += " UNSIGNED"
    if not c.optional:
        out += " NOT NULL"
    if c.auto_increment:
        out += " AUTO_INCREMENT"
    if c.has_default:
        out += " DEFAULT " + ("NULL" if c.default is None else c.default)
    if c.charset:
        out += " CHARSET " + c.charset
    if c.enum_values is not None:
        out += " VALUES " + "|".join(c.enum_values)
    return out


def summary(t: TableDef) -> dict:
    """A table as the fixture file writes it."""
    return {"primary_key": list(t.key_columns), "charset": t.charset, "columns": [describe(c) for c in t.columns]}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_ddl_case(case):
    """The script leaves the expected tables; the listed lines are reported as unparseable."""
    model, errors = apply_script(case["sql"], "inventory")
    assert [e["line"] for e in errors] == case.get("errors", []), errors
    assert {str(k): summary(v) for k, v in sorted(model.tables.items())} == case["tables"]


def test_table_changes_round_trip():
    """A table survives its Debezium tableChanges JSON (what the history stores)."""
    model, _ = apply_script(CASES[1]["sql"], "inventory")
    for table in model.tables.values():
        again = TableDef.from_change_json(table.id, table.to_change_json())
        assert summary(again) == summary(table)


TYPE_NAMES = yaml.safe_load((Path(__file__).parent / "data" / "ddl_type_names.yaml").read_text())


@pytest.mark.parametrize("case", TYPE_NAMES, ids=[c[0] for c in TYPE_NAMES])
def test_type_name_and_jdbc_type(case):
    """A declaration's typeName, jdbcType, length, scale and charset in tableChanges are Debezium's."""
    declaration, type_name, jdbc_type, length, scale, charset = case
    model, errors = apply_script(f"CREATE TABLE t (c {declaration}) DEFAULT CHARSET=latin1", "inventory")
    assert not errors, errors
    column = next(iter(model.tables.values())).columns[0].to_change_json()
    got = [column["typeName"], column["jdbcType"], column["length"], column["scale"], column["charsetName"]]
    assert got == [type_name, jdbc_type, length, scale, charset]
    assert column["typeExpression"] == type_name
