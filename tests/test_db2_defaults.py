"""Db2 column defaults in the schemas, as Debezium's Db2DefaultValueConverter reads SYSCAT.COLUMNS.DEFAULT.

The stand-in keeps each DEFAULT as Db2 stores it (date and time constants in Db2's ISO forms), so the
snapshot's schemas and schema change events come from the same catalog text a real Db2 gives.
What it cannot vouch for: Db2's exact normalisation of numeric constants (kept as written here) and
the server-side ``SELECT DATE(...)`` Debezium runs for temporal constants (parsed locally here).
"""

from __future__ import annotations

import pytest

from cdc_core.engine import Engine
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_db2.defaults import default_value
from cdc_db2.timestamps import epoch_encoder
from cdc_db2.standin.testing import standin  # noqa: F401  (fixture)

#: column, Db2 column definition, SYSCAT.COLUMNS.DEFAULT as stored, the field schema's default
#: (None: no default), under the default modes.
COLUMNS = [
    ("SI", "SMALLINT DEFAULT -5", "-5", -5),
    ("I", "INTEGER NOT NULL DEFAULT 7", "7", 7),
    ("BI", "BIGINT DEFAULT 9007199254740993", "9007199254740993", 9007199254740993),
    ("R", "REAL DEFAULT 1.5", "1.5", 1.5),
    ("DB", "DOUBLE DEFAULT 2.25", "2.25", 2.25),
    ("DC", "DECIMAL(10,2) DEFAULT 12.34", "12.34", "BNI="),
    ("DF", "DECFLOAT DEFAULT 1.5", "1.5", None),  # VariableScaleDecimal is a struct: no default (KAFKA-12694)
    ("C", "CHAR(5) DEFAULT 'ab'", "'ab'", "ab   "),
    ("V", "VARCHAR(20) DEFAULT 'x''y'", "'x''y'", "x''y"),  # Debezium's unquote keeps the doubled quote
    ("G", "GRAPHIC(3) DEFAULT 'ab'", "'ab'", "ab "),
    ("VG", "VARGRAPHIC(10) DEFAULT 'ün'", "'ün'", "ün"),
    ("CL", "CLOB DEFAULT 'c'", "'c'", None),  # no mapper for CLOB
    ("FB", "VARCHAR(4) FOR BIT DATA DEFAULT NULL", "NULL", None),
    ("DA", "DATE DEFAULT '2018-06-20'", "'2018-06-20'", 17702),
    ("DN", "DATE NOT NULL DEFAULT CURRENT DATE", "CURRENT DATE", 0),
    ("DO", "DATE DEFAULT CURRENT DATE", "CURRENT DATE", None),
    ("TI", "TIME DEFAULT '15:13:16'", "'15.13.16'", 54796000),
    ("TN", "TIME NOT NULL DEFAULT CURRENT TIME", "CURRENT TIME", 0),
    ("TS", "TIMESTAMP DEFAULT '2018-06-20 15:13:16.945104'", "'2018-06-20-15.13.16.945104'", 1529507596945104),
    ("TSN", "TIMESTAMP NOT NULL DEFAULT CURRENT TIMESTAMP", "CURRENT TIMESTAMP", 0),
    ("BO", "BOOLEAN DEFAULT TRUE", "TRUE", True),
    ("N", "INTEGER DEFAULT NULL", "NULL", None),
    ("ND", "INTEGER", None, None),
]


def test_defaults_in_the_snapshots_schemas_and_schema_change_event(standin):
    standin.create_table("MYSCHEMA", "DEFS", [("ID", "INTEGER NOT NULL")] + [(c, t) for c, t, *_ in COLUMNS], key=["ID"])
    stored = dict(standin.execute("SELECT colname, \"DEFAULT\" FROM syscat.columns WHERE tabname = 'DEFS'"))
    assert {c: stored[c] for c, *_ in COLUMNS} == {c: text for c, _, text, _ in COLUMNS}
    standin.execute('INSERT INTO "MYSCHEMA"."DEFS" ("ID") VALUES (1)')  # the PostgreSQL table applies the defaults
    standin.add_table("MYSCHEMA", "DEFS")
    standin.agent.start()
    records: list = []
    Engine(standin.properties(**{"snapshot.mode": "initial_only"}), offset_store=MemoryOffsetStore()).run(records.extend)
    row = next(r for r in records if r.topic.endswith(".DEFS"))
    fields = {f["field"]: f for f in row.value_schema.to_json()["fields"][1]["fields"]}
    for column, _, _, default in COLUMNS:
        assert fields[column].get("default") == default, column
    assert row.value["after"]["I"] == 7 and row.value["after"]["C"] == "ab   "
    change = next(r for r in records if r.topic == row.topic.split(".")[0])
    columns = {c["name"]: c for c in change.value["tableChanges"][0]["table"]["columns"]}
    assert {c: columns[c]["defaultValueExpression"] for c, *_ in COLUMNS} == {c: text for c, _, text, _ in COLUMNS}


#: (java.sql.Types, type name, length, nullable, DEFAULT text, converter) -> default: the stored forms the stand-in does not make.
PARSED = [
    # A TIMESTAMP's text goes to its column's converter (cdc_db2.timestamps: up to nine fractional digits kept).
    ((93, "TIMESTAMP", 26, True, "'2024-01-02-12.30.00'", epoch_encoder(1_000_000)), 1704198600000000),
    ((93, "TIMESTAMP", 29, True, "'1969-12-31-23.59.59.999999999'", epoch_encoder(1_000_000_000)), -1),
    ((93, "TIMESTAMP", 26, True, "'2024-13-02-12.30.00'", epoch_encoder(1_000_000)), None),  # a warning, no default
    ((92, "TIME", 8, True, "'12.30.05'", lambda v: v.isoformat()), "12:30:05"),
    ((16, "BOOLEAN", 1, True, "1", bool), True),
    ((16, "BOOLEAN", 1, True, "0", bool), False),
    ((4, "INTEGER", 4, True, "  42  ", int), 42),
    ((4, "INTEGER", 4, True, "NEXT VALUE FOR S", int), None),  # an expression: a warning, no default
    ((1111, "DECFLOAT", 34, True, "1.5", str), "1.5"),  # decimal.handling.mode=string
    ((2005, "CLOB", 100, True, "'x'", str), None),
    ((91, "DATE", 4, True, "CURRENT DATE", str), None),
]


@pytest.mark.parametrize("args,expected", PARSED)
def test_default_texts_as_debezium_parses_them(args, expected):
    assert default_value(*args) == expected


def test_a_definition_read_back_from_the_schema_history_is_the_same_table():
    """The restart path (cdc_db2.schema_changes.infos_from_json): the history's tableChanges give back the same
    columns, schemas and defaults, FOR BIT DATA (JDBC BINARY/VARBINARY) included."""
    from cdc_core.relational import Table, TableId
    from cdc_db2.schema_changes import infos_from_json, table_json
    from cdc_db2.types import ColumnInfo, TypeModes, column

    modes = TypeModes()
    infos = [ColumnInfo("ID", 1, "INTEGER", 4, 0, False), ColumnInfo("FB", 2, "VARCHAR", 4, 0, True, 0, "NULL"),
             ColumnInfo("CB", 3, "CHARACTER", 2, 0, True, 0), ColumnInfo("C", 4, "CHARACTER", 5, 0, True, 1208, "'ab'"),
             ColumnInfo("DC", 5, "DECIMAL", 10, 2, True, 0, "12.34"), ColumnInfo("TS", 6, "TIMESTAMP", 26, 6, False, 0,
                                                                              "CURRENT TIMESTAMP")]
    table = Table(TableId("DB", "S", "T"), [column(i, modes) for i in infos], ["ID"])
    definition = table_json(table)
    assert [c["jdbcType"] for c in definition["columns"]] == [4, -3, -2, 1, 3, 93]
    again = Table(table.id, [column(i, modes) for i in infos_from_json(definition)], ["ID"])
    assert table_json(again) == definition
    assert [c.schema.to_json() for c in again.columns] == [c.schema.to_json() for c in table.columns]
