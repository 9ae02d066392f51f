"""jdbcType/typeName/length/scale of SQL Server columns in the schema history, as mssql-jdbc reports them to Debezium.

tests/data/sqlserver_jdbc_types.yaml: geometry, geography and hierarchyid are VARBINARY (-3) there, not
microsoft.sql.Types.GEOMETRY/GEOGRAPHY (-157/-158, ResultSetMetaData only), sql_variant SQL_SS_VARIANT (-150).
On the stand-in's catalog.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from cdc_core.config import Config
from cdc_sqlserver import odbc
from cdc_sqlserver.catalog import read_tables
from cdc_sqlserver.schema_history import column_json
from cdc_sqlserver.standin.testing import standin  # noqa: F401  (fixture)
from cdc_sqlserver.types import TypeModes

COLUMNS = yaml.safe_load((Path(__file__).parent / "data" / "sqlserver_jdbc_types.yaml").read_text())["columns"]


def test_table_changes_columns_as_the_jdbc_driver_reports_them(standin):
    standin.create_table("CREATE TABLE dbo.jdbc_types (id int primary key, " + ", ".join(c["ddl"] for c in COLUMNS) + ")")
    conn = odbc.connect(Config(standin.properties()), standin.dbname)
    try:
        table = read_tables(conn, standin.dbname, TypeModes())[("dbo", "jdbc_types")]
    finally:
        conn.close()
    got = {c.name: column_json(c) for c in table.columns}
    wrong = {}
    for c in COLUMNS:
        name = c["ddl"].split()[0]
        want = {k: v for k, v in c.items() if k != "ddl"}
        have = {k: got[name][k] for k in want}
        if have != want:
            wrong[name] = (have, want)
    assert not wrong, f"(cdc, mssql-jdbc/Debezium) {wrong}"
