"""SQL Server types beyond the common ones (tests/data/sqlserver_types.yaml) through snapshot and streaming, per mode set.

Debezium 2.7.4's AbstractSqlServerDatatypesTest tables (type_int, type_fp, type_string, type_time, type_xml),
DATETIMEOFFSET (ZonedTimestamp), ROWVERSION, spatial and
hierarchyid (bytes, as 2.7.4 gives them), XML, UNIQUEIDENTIFIER, MONEY/SMALLMONEY at their limits,
(N)VARCHAR(MAX), SQL_VARIANT (left out), and column.propagate.source.type's length/scale. Verified on
the stand-in only: it stores DATETIMEOFFSET as timestamptz (the offset is gone, the instant kept, to
microseconds) and the binary types as bytea, so the real driver's value types are not exercised.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import yaml

from cdc_core.engine import Engine
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_sqlserver.standin.testing import standin  # noqa: F401  (fixture)

DATA = yaml.safe_load((Path(__file__).parent / "data" / "sqlserver_types.yaml").read_text())
COLUMNS = DATA["columns"]


def _by_mode(value, mode_set):
    if isinstance(value, dict) and set(value) <= set(DATA["mode_sets"]) and value:
        return value[mode_set]
    return value


def _expected(column, mode_set):
    if "expected_repeat" in column:
        text, n = column["expected_repeat"]
        return text * n
    return _by_mode(column["expected"], mode_set)


@pytest.mark.parametrize("mode_set", list(DATA["mode_sets"]))
def test_types_in_snapshot_and_stream(standin, mode_set):
    ddl = ", ".join(f"{c['column']} {c['type']}" for c in COLUMNS)
    standin.create_table(f"CREATE TABLE dbo.more_types (id INT NOT NULL PRIMARY KEY, {ddl})")
    names = ", ".join(c["column"] for c in COLUMNS)
    values = ", ".join(c["insert"] for c in COLUMNS)
    standin.execute(f"INSERT INTO dbo.more_types (id, {names}) VALUES (1, {values})")
    standin.enable_db()
    standin.enable_table("dbo", "more_types")
    standin.agent.start()
    config = standin.properties(**DATA["mode_sets"][mode_set], **{"column.propagate.source.type": ".*"})
    snap, streamed = snapshot_then_insert(standin, config, "more_types",
                                          f"INSERT INTO dbo.more_types (id, {names}) VALUES (2, {values})")
    fields = {f.name: f.schema for f in snap.value_schema.field("after").schema.fields}
    for record in (snap, streamed):
        after = record.value["after"]
        for c in COLUMNS:
            if c.get("omitted"):
                assert c["column"] not in after and c["column"] not in fields, c["column"]
                continue
            assert after[c["column"]] == _expected(c, mode_set), c["column"]
    for c in COLUMNS:
        if c.get("omitted"):
            continue
        schema = _by_mode(c["schema"], mode_set)
        field = fields[c["column"]]
        rendered = field.to_json()
        assert (rendered["type"], field.name) == (schema["type"], schema["name"]), c["column"]
        # Every named (logical) schema is version 1 (Kafka's Decimal/Date/Time/Timestamp, Debezium's time types),
        # compared by Debezium's VerifyRecord.assertConnectSchemasAreEqual.
        assert rendered.get("version") == (1 if schema["name"] else None), c["column"]
        assert rendered.get("default") == _by_mode(c.get("default"), mode_set), (c["column"], "default")
        if "parameters" in c:
            own = {k: v for k, v in (field.parameters or {}).items() if not k.startswith("__debezium.")}
            assert own == _by_mode(c["parameters"], mode_set), (c["column"], "parameters")
        for key, value in (c.get("source") or {}).items():
            assert (field.parameters or {}).get(f"__debezium.source.column.{key}") == value, (c["column"], key)


def snapshot_then_insert(standin, config: dict, table: str, insert: str) -> tuple:
    """Run the engine on ``config``: ``dbo.<table>``'s first snapshot record, then ``insert``'s streamed one."""
    engine = Engine(config, offset_store=MemoryOffsetStore())
    records: list = []
    runner = threading.Thread(target=engine.run, args=(records.extend,))
    runner.start()

    def data():
        return [r for r in records if r.topic.endswith(f".{table}")]

    try:
        deadline = time.monotonic() + 30
        while not data():
            assert runner.is_alive() and time.monotonic() < deadline
            time.sleep(0.05)
        standin.execute(insert)
        while len(data()) < 2:
            assert runner.is_alive() and time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        engine.stop()
        runner.join(30)
    snap, streamed = data()[:2]
    assert (snap.value["op"], streamed.value["op"]) == ("r", "c")
    return snap, streamed
