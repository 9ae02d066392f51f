"""The same end-to-end checks against a real SQL Server 2022: testcontainers, or the server ``CDC_TEST_SQLSERVER`` names.

``CDC_TEST_SQLSERVER`` is an ODBC connection string to a server whose login may create databases
and enable CDC (sysadmin), with SQL Server Agent running, e.g.
``Driver={ODBC Driver 18 for SQL Server};Server=host,1433;UID=sa;PWD=...;TrustServerCertificate=yes``.
Otherwise a Docker engine starts ``mcr.microsoft.com/mssql/server:2022-latest`` with the Agent on.
These are the tests that check the stand-in's assumptions on the first machine that can run them.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from cdc_core.containers import docker_problem

from cdc_core.engine import Engine
from cdc_core.stores.memory_offsets import MemoryOffsetStore

IMAGE = "mcr.microsoft.com/mssql/server:2022-latest"
SA_PASSWORD = "Cdc-Test-Passw0rd"


def _driver_problem() -> str | None:
    try:
        import pyodbc
    except ImportError as e:  # pragma: no cover - pyodbc is a dependency of cdc-sqlserver
        return f"pyodbc cannot be imported ({e})"
    drivers = pyodbc.drivers()
    if not any("SQL Server" in d or "FreeTDS" in d for d in drivers):
        return ("no ODBC driver for SQL Server is installed (pyodbc sees: " + (", ".join(drivers) or "none")
                + "); install msodbcsql18 or tdsodbc")
    return None



@pytest.fixture(scope="session")
def sqlserver() -> Iterator[dict[str, str]]:
    """``{"Server": ..., "UID": ..., "PWD": ..., ...}``: a real SQL Server's ODBC connection settings."""
    text = os.environ.get("CDC_TEST_SQLSERVER")
    if not text:
        problem = docker_problem("CDC_TEST_SQLSERVER", f"real SQL Server ({IMAGE})")
        if problem:
            pytest.skip(problem)
    problem = _driver_problem()
    if problem:
        pytest.skip(problem)
    if text:
        from cdc_sqlserver.standin.dbapi import parse_connection_string

        yield {k.lower(): v for k, v in parse_connection_string(text).items()}
        return
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.waiting_utils import wait_for_logs

    container = (DockerContainer(IMAGE).with_env("ACCEPT_EULA", "Y").with_env("MSSQL_SA_PASSWORD", SA_PASSWORD)
                 .with_env("MSSQL_AGENT_ENABLED", "true").with_exposed_ports(1433))
    with container:
        wait_for_logs(container, "SQL Server is now ready for client connections", timeout=180)
        yield {"server": f"{container.get_container_host_ip()},{container.get_exposed_port(1433)}", "uid": "sa",
               "pwd": SA_PASSWORD}


def _connect(settings: dict[str, str], database: str = "master") -> Any:
    import pyodbc

    driver = next(d for d in [*pyodbc.drivers()] if "SQL Server" in d or "FreeTDS" in d)
    text = (f"Driver={{{settings.get('driver', driver)}}};Server={settings['server']};Database={database};"
            f"UID={settings['uid']};PWD={settings['pwd']};TrustServerCertificate=yes;Encrypt=no")
    return pyodbc.connect(text, autocommit=True)


@pytest.fixture
def cdc_db(sqlserver) -> Iterator[str]:
    """A database with CDC enabled and the chapter's ``dbo.customers`` captured, four rows in it."""
    name = f"cdc_{uuid.uuid4().hex[:10]}"
    master = _connect(sqlserver)
    master.execute(f"CREATE DATABASE [{name}]")
    conn = _connect(sqlserver, name)
    conn.execute("EXEC sys.sp_cdc_enable_db")
    conn.execute("CREATE TABLE dbo.customers (id INTEGER IDENTITY(1001,1) NOT NULL PRIMARY KEY, "
                 "first_name VARCHAR(255) NOT NULL, last_name VARCHAR(255) NOT NULL, email VARCHAR(255) NOT NULL UNIQUE)")
    conn.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('Sally', 'Thomas', 's@acme.com'), "
                 "('George', 'Bailey', 'g@foobar.com'), ('Edward', 'Walker', 'ed@walker.com'), "
                 "('Anne', 'Kretchmar', 'annek@noanswer.org')")
    conn.execute("EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'customers', @role_name = NULL, "
                 "@supports_net_changes = 0")
    try:
        yield name
    finally:
        conn.close()
        master.execute(f"ALTER DATABASE [{name}] SET SINGLE_USER WITH ROLLBACK IMMEDIATE")
        master.execute(f"DROP DATABASE [{name}]")
        master.close()


def test_snapshot_then_streaming_on_a_real_sql_server(sqlserver, cdc_db):
    host, _, port = sqlserver["server"].partition(",")
    config = {"connector.class": "io.debezium.connector.sqlserver.SqlServerConnector", "database.hostname": host,
              "database.port": port or 1433, "database.user": sqlserver["uid"], "database.password": sqlserver["pwd"],
              "database.names": cdc_db, "topic.prefix": "server1", "database.encrypt": "false",
              "database.trustServerCertificate": "true", "poll.interval.ms": 200}
    engine = Engine(config, offset_store=MemoryOffsetStore())
    records: list = []
    schema_changes: list = []
    runner = threading.Thread(target=engine.run, args=(lambda batch: [
        (schema_changes if r.topic == "server1" else records).append(r) for r in batch],))
    runner.start()
    conn = _connect(sqlserver, cdc_db)
    try:
        deadline = time.monotonic() + 120
        while len(records) < 4:
            assert runner.is_alive() and time.monotonic() < deadline
            time.sleep(0.1)
        conn.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES ('john', 'doe', 'john.doe@example.org')")
        conn.execute("UPDATE dbo.customers SET email = 'noreply@example.org' WHERE id = 1005")
        conn.execute("DELETE FROM dbo.customers WHERE id = 1005")
        while len(records) < 8:  # 4 reads, c, u, d, tombstone
            assert runner.is_alive() and time.monotonic() < deadline, records
            time.sleep(0.1)
    finally:
        engine.stop()
        runner.join(60)
        conn.close()
    assert [r.value["op"] if r.value else None for r in records[:8]] == ["r", "r", "r", "r", "c", "u", "d", None]
    update = records[5].value
    assert update["before"]["email"] == "john.doe@example.org" and update["after"]["email"] == "noreply@example.org"
    assert update["source"]["event_serial_no"] == 2
    assert records[4].topic == f"server1.{cdc_db}.dbo.customers"
    # The snapshot's CREATE, as the chapter shows it (ints: JDBC COLUMN_SIZE 10, scale 0; "int identity").
    (create,) = schema_changes
    columns = create.value["tableChanges"][0]["table"]["columns"]
    assert [(c["name"], c["typeName"], c["jdbcType"], c["length"], c["scale"]) for c in columns][:2] == [
        ("id", "int identity", 4, 10, 0), ("first_name", "varchar", 12, 255, None)]


def test_parse_of_default_texts_answers_as_the_stand_in_assumes(sqlserver, cdc_db):
    """tests/data/sqlserver_parse.yaml on SQL Server itself: the stand-in's PARSE (rounding, refusals) checked."""
    from datetime import date, datetime
    from datetime import time as time_of_day
    from pathlib import Path

    import pyodbc
    import yaml

    data = Path(__file__).parents[3] / "tests" / "data" / "sqlserver_parse.yaml"
    conn = _connect(sqlserver, cdc_db)
    conn.autocommit = False  # a refusal ends the statement only: the transaction goes on
    try:
        for case in yaml.safe_load(data.read_text())["cases"]:
            # pyodbc has no Python type for DATETIMEOFFSET: SQL Server's own text of it, as the stand-in gives.
            statement = (f"SELECT CONVERT(nvarchar(40), PARSE(? AS {case['type']}))" if case["type"] == "datetimeoffset"
                         else f"SELECT PARSE(? AS {case['type']})")
            if case.get("error"):
                with pytest.raises(pyodbc.Error):
                    conn.execute(statement, case["text"]).fetchone()
                continue
            (value,) = conn.execute(statement, case["text"]).fetchone()
            text = value.isoformat() if isinstance(value, date | datetime | time_of_day) else value
            assert text == case["value"], case
        assert conn.execute("SELECT 1").fetchone()[0] == 1
    finally:
        conn.rollback()
        conn.close()


def test_debeziums_datatypes_on_a_real_sql_server(sqlserver, cdc_db):
    """AbstractSqlServerDatatypesTest's type_time/type_fp/type_xml rows, as Debezium inserts them, against its
    EXPECTED_* values: what the stand-in cannot store (100 ns, SMALLDATETIME's minute, DATETIMEOFFSET's offset)
    and the real driver's value shapes (cdc_sqlserver.driver_values) checked end to end. Not run here (no server)."""
    import base64

    conn = _connect(sqlserver, cdc_db)
    try:
        conn.execute("CREATE TABLE dbo.type_time (id int not null, val_date date, val_time_p2 time(2), val_time time(4), "
                     "val_time_p7 time(7), val_datetime2 datetime2, val_datetimeoffset datetimeoffset, "
                     "val_datetime datetime, val_smalldatetime smalldatetime, primary key (id))")
        conn.execute("CREATE TABLE dbo.type_fp (id int not null, val_decimal decimal(6,3), val_numeric numeric, "
                     "val_float float, val_real real, val_smallmoney smallmoney, val_money money primary key (id))")
        conn.execute("CREATE TABLE dbo.type_xml (id int not null, val_xml xml, primary key (id))")
        for table in ("type_time", "type_fp", "type_xml"):
            conn.execute(f"EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'{table}', "
                         "@role_name = NULL, @supports_net_changes = 0")
        conn.execute("INSERT INTO type_time VALUES (0, '2018-07-13', '10:23:45.678', '10:23:45.6789', "
                     "'10:23:45.6789012', '2018-07-13 11:23:45.34', '2018-07-13 12:23:45.456+11:00', "
                     "'2018-07-13 13:23:45.78', '2018-07-13 14:23:45')")
        conn.execute("INSERT INTO type_fp VALUES (0, 1.123, 2, 3.323, 4.323, 5.323, 6.323)")
        conn.execute("INSERT INTO type_xml VALUES (0, '<a>b</a>')")
    finally:
        conn.close()
    host, _, port = sqlserver["server"].partition(",")
    config = {"connector.class": "io.debezium.connector.sqlserver.SqlServerConnector", "database.hostname": host,
              "database.port": port or 1433, "database.user": sqlserver["uid"], "database.password": sqlserver["pwd"],
              "database.names": cdc_db, "topic.prefix": "server1", "database.encrypt": "false",
              "database.trustServerCertificate": "true", "table.include.list": "dbo\\.type_.*"}
    engine = Engine(config, offset_store=MemoryOffsetStore())
    rows: dict[str, Any] = {}
    runner = threading.Thread(target=engine.run, args=(lambda batch: [
        rows.__setitem__(r.topic.rpartition(".")[2], r) for r in batch if r.topic != "server1" and r.value],))
    runner.start()
    try:
        deadline = time.monotonic() + 120
        while len(rows) < 3:
            assert runner.is_alive() and time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        engine.stop()
        runner.join(60)
    after = rows["type_time"].value["after"]
    assert {k: v for k, v in after.items() if k != "id"} == {
        "val_date": 17_725, "val_time_p2": 37_425_680, "val_time": 37_425_678_900, "val_time_p7": 37_425_678_901_200,
        "val_datetime2": 1_531_481_025_340_000_000, "val_datetimeoffset": "2018-07-13T12:23:45.456+11:00",
        "val_datetime": 1_531_488_225_780, "val_smalldatetime": 1_531_491_840_000}
    fp = rows["type_fp"].value["after"]
    assert (fp["val_float"], fp["val_real"]) == (3.323, 4.323)
    decimals = {k: int.from_bytes(base64.b64decode(fp[k]), "big", signed=True)
                for k in ("val_decimal", "val_numeric", "val_smallmoney", "val_money")}
    assert decimals == {"val_decimal": 1123, "val_numeric": 2, "val_smallmoney": 53230, "val_money": 63230}
    fields = {f.name: f.schema for f in rows["type_fp"].value_schema.field("after").schema.fields}
    assert fields["val_numeric"].parameters == {"scale": "0", "connect.decimal.precision": "18"}
    xml = rows["type_xml"]
    assert xml.value["after"]["val_xml"] == "<a>b</a>"
    assert xml.value_schema.field("after").schema.field("val_xml").schema.name is None
