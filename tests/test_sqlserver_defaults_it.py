"""Debezium 2.7.4's SqlServerConnectionIT column defaults (tests/data/sqlserver_defaults.yaml) on the stand-in.

Every type's DEFAULT as the connector's schema gives it (JsonConverter's form), read from the catalog as the
connector reads it, temporal texts PARSEd by the (stand-in) server.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cdc_core.config import Config
from cdc_sqlserver import odbc
from cdc_sqlserver.catalog import read_tables
from cdc_sqlserver.standin.testing import standin  # noqa: F401  (fixture)
from cdc_sqlserver.types import TypeModes

DATA = yaml.safe_load((Path(__file__).parent / "data" / "sqlserver_defaults.yaml").read_text())


@pytest.mark.parametrize("table", DATA["tables"], ids=[t["name"] for t in DATA["tables"]])
def test_defaults_of_every_type(standin, table):
    standin.create_table(f"CREATE TABLE dbo.{table['name']} (" + ", ".join(c["ddl"] for c in table["columns"]) + ")")
    conn = odbc.connect(Config(standin.properties()), standin.dbname)
    try:
        read = read_tables(conn, standin.dbname, TypeModes())[("dbo", table["name"])]
    finally:
        conn.close()
    got = {c.name: c.schema.to_json().get("default") for c in read.columns if c.schema is not None}
    wrong = {}
    for c in table["columns"]:
        name = c["ddl"].split()[0]
        want = None if c.get("none") else c.get("stand_in", c.get("default"))
        if got.get(name) != want:
            wrong[name] = (got.get(name), want)
    assert not wrong, f"{table['from']}: (cdc, Debezium) {wrong}"
