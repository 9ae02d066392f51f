"""Debezium 2.7.4's AbstractDb2DefaultValueIT, offline (Db2OfflineDefaultValueIT) and online
(ZZZDb2OnlineDefaultValueIT), on the stand-in: tests/data/db2_default_value_it.yaml.

The IT's rounds, each checked on the one event it produces: the table created with the "add" defaults and
snapshotted (then activated and a row streamed), every default changed by ALTER COLUMN ... SET DEFAULT and a
row inserted, columns A<name> added with the "add" defaults and a row inserted, then a restart that loads the
schema history. The schema change between rounds goes through the IT's performSchemaChange: offline, the
connector stopped, the table deactivated and taken out of capture mode, altered, put back (ADDTABLE, ACTIVE)
and the connector started again; online, the source table and its CD table altered, the table deactivated and
activated again, then asncap reinitialised (the IT's refreshAndWait).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kit.engine import EngineThread

from cdc_core.stores.memory_history import MemorySchemaHistoryStore
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_db2.standin.testing import standin  # noqa: F401  (fixture)

DATA = yaml.safe_load((Path(__file__).parent / "data" / "db2_default_value_it.yaml").read_text())
KEYS = ("name", "definition", "add", "modify", "expected_add", "expected_modify")
COLUMNS = [dict(zip(KEYS, c)) for c in DATA["columns"]]
REGISTERS = {"DATE": "CURRENT DATE", "TIME": "CURRENT TIME", "TIMESTAMP": "CURRENT TIMESTAMP"}
TOPIC = "testdb.DB2INST1.DV_TEST"


def _definitions(prefix: str = "") -> list[tuple[str, str]]:
    """The IT's columns of each ColumnDefinition: <name> (the "add" default), <name>_NULL, and for a temporal type
    <name>_SYSDATE and <name>_SYSDATE_NONNULL."""
    out = []
    for c in COLUMNS:
        name, definition = prefix + c["name"], c["definition"]
        out += [(name, f"{definition} DEFAULT {c['add']}"), (f"{name}_NULL", f"{definition} DEFAULT NULL")]
        if definition in REGISTERS:
            out += [(f"{name}_SYSDATE", f"{definition} DEFAULT {REGISTERS[definition]}"),
                    (f"{name}_SYSDATE_NONNULL", f"{definition} NOT NULL DEFAULT {REGISTERS[definition]}")]
    return out


def _check(record, prefix: str, expected: str) -> None:
    """assertSchemaFieldWithSameDefaultAndValue/-WithDefaultCurrentDate for one column set (``expected``: the
    ColumnDefinition's key of the default that applies)."""
    fields = {f["field"]: f for f in record.value_schema.to_json()["fields"][1]["fields"]}
    after = record.value["after"]
    for c in COLUMNS:
        name, value = prefix + c["name"], c[expected]
        assert fields[name].get("default") == value, name
        if value is not None:
            assert after[name] == value, name
        assert (fields[f"{name}_NULL"].get("default"), after[f"{name}_NULL"]) == (None, None), name
        if c["definition"] in REGISTERS:
            # No default; the IT checks no value (the row holds the current date/time, DEFAULT applies to it).
            assert fields[f"{name}_SYSDATE"].get("default") is None, name
            assert fields[f"{name}_SYSDATE_NONNULL"]["default"] == 0 and after[f"{name}_SYSDATE_NONNULL"] >= 1, name


class Run:
    """The connector of one IT run: its stores survive the restarts of the offline procedure."""

    def __init__(self, standin):
        self.standin = standin
        self.config = standin.properties("testdb", **{"table.include.list": "db2inst1.dv_test"})
        self.offsets, self.history = MemoryOffsetStore(), MemorySchemaHistoryStore()
        self.runner: EngineThread | None = None
        self.seen = 0

    def start(self) -> None:
        self.runner = EngineThread(self.config, self.offsets, self.history).start()
        self.seen = 0

    def stop(self) -> None:
        assert self.runner is not None
        self.runner.stop()

    def next_row(self, what: str):
        """The next DV_TEST event of this engine."""
        assert self.runner is not None

        def rows(rs):
            return [r for r in rs if r.topic == TOPIC]

        self.runner.wait(lambda rs: len(rows(rs)) > self.seen, what)
        self.seen += 1
        return rows(self.runner.snapshot())[self.seen - 1]


def _change(run: Run, procedure: str, alter) -> None:
    """The IT's performSchemaChange: ``alter(cd)`` between the procedure's steps."""
    standin = run.standin
    if procedure == "offline":
        run.stop()
        standin.set_state("DB2INST1", "DV_TEST", "I")
        standin.remove_table("DB2INST1", "DV_TEST")
        alter(False)
        standin.add_table("DB2INST1", "DV_TEST")  # ADDTABLE, STATE 'A', reinit (TestHelper.enableTableCdc)
        run.start()
    else:
        alter(True)
        standin.set_state("DB2INST1", "DV_TEST", "I")
        standin.set_state("DB2INST1", "DV_TEST", "A")
        standin.execute("SELECT asncdc.asncdcservices('reinit', 'asncdc')")
    assert run.runner is not None
    run.runner.wait_streaming()


@pytest.mark.parametrize("procedure", ["offline", "online"])
def test_default_values_as_abstract_db2_default_value_it(standin, procedure):
    # testDefaultValuesCreateTableAndSnapshot
    standin.create_table("DB2INST1", "DV_TEST", [("ID", "INTEGER NOT NULL")] + _definitions(), key=["ID"])
    standin.execute('INSERT INTO "DB2INST1"."DV_TEST" ("ID") VALUES (1)')
    standin.add_table("DB2INST1", "DV_TEST")
    standin.agent.start()
    run = Run(standin)
    run.start()
    try:
        snapshot = run.next_row("the snapshot row")
        assert (snapshot.value["op"], snapshot.value["after"]["ID"]) == ("r", 1)
        _check(snapshot, "", "expected_add")
        run.runner.wait_streaming()
        standin.execute('INSERT INTO "DB2INST1"."DV_TEST" ("ID") VALUES (0)')
        assert run.next_row("row 0").value["after"]["ID"] == 0

        # testDefaultValuesAlterTableModifyExisting
        def modify(cd: bool) -> None:
            for c in COLUMNS:
                standin.set_default("DB2INST1", "DV_TEST", c["name"], c["modify"], cd)
                standin.set_default("DB2INST1", "DV_TEST", c["name"] + "_NULL", "NULL", cd)

        _change(run, procedure, modify)
        standin.execute('INSERT INTO "DB2INST1"."DV_TEST" ("ID") VALUES (2)')
        modified = run.next_row("row 2")
        assert (modified.value["op"], modified.value["after"]["ID"]) == ("c", 2)
        _check(modified, "", "expected_modify")

        # testDefaultValuesAlterTableAdd
        def add(cd: bool) -> None:
            for name, definition in _definitions("A"):
                standin.alter_add_column("DB2INST1", "DV_TEST", name, definition, cd)

        _change(run, procedure, add)
        standin.execute('INSERT INTO "DB2INST1"."DV_TEST" ("ID") VALUES (3)')
        added = run.next_row("row 3")
        assert (added.value["op"], added.value["after"]["ID"]) == ("c", 3)
        _check(added, "", "expected_modify")
        _check(added, "A", "expected_add")

        # TestDefaultValuesByRestartAndLoadingHistoryTopic
        run.stop()
        run.start()
        run.runner.wait_streaming()
        assert run.runner.alive
    finally:
        run.stop()
