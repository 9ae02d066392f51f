"""The stand-in answers ``SELECT PARSE(? AS <temporal type>)`` as SQL Server does (tests/data/sqlserver_parse.yaml).

The connector sends Debezium's statement for every temporal default (cdc_sqlserver.server_parse); the
stand-in's translation gives SQL Server's rounding (DATETIME 1/300 s, SMALLDATETIME the minute), its
refusals, and a refusal that leaves an open transaction usable, as SQL Server's statement-level error.
"""

from __future__ import annotations

from datetime import date, datetime, time
from pathlib import Path

import pyodbc
import pytest
import yaml

from cdc_core.config import Config
from cdc_sqlserver import odbc
from cdc_sqlserver.standin.testing import standin  # noqa: F401  (fixture)

CASES = yaml.safe_load((Path(__file__).parent / "data" / "sqlserver_parse.yaml").read_text())["cases"]


def _text(value):
    return value.isoformat() if isinstance(value, date | datetime | time) else value


def test_parse_answers_as_sql_server(standin):
    config = Config(standin.properties())
    conn = odbc.connect(config, standin.dbname, autocommit=False)
    try:
        for case in CASES:
            statement = f"SELECT PARSE(? AS {case['type']})"
            if case.get("error"):
                with pytest.raises(pyodbc.Error, match="Error converting string value") as refused:
                    conn.execute(statement, case["text"]).fetchone()
                assert refused.value.args[0] == "22007", case
            else:
                (value,) = conn.execute(statement, case["text"]).fetchone()
                assert _text(value) == case["value"], case
        # The refusals ended their statements only: the transaction still answers.
        assert conn.execute("SELECT 1").fetchone()[0] == 1
    finally:
        conn.close()
