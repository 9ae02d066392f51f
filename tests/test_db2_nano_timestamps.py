"""Db2 TIMESTAMP(0..12) keeps its digits below the microsecond (tests/data/db2_nano_timestamps.yaml) on the stand-in.

ibm_db gives a TIMESTAMP as a datetime (microseconds); Debezium 2.7.4 (JCC, java.sql.Timestamp) keeps
nanoseconds, so cdc reads a TIMESTAMP(7..12) as ``VARCHAR(col)`` in the snapshot, the CD tables and the
incremental snapshot's chunks. The stand-in holds such a column as Db2's string and answers a plain SELECT
of it as ibm_db would (a datetime cut to microseconds): the first test shows it, so the others would fail
if any of the connector's queries read the column plainly.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from kit.engine import run_until

from cdc_db2.standin import dbapi
from cdc_db2.standin.testing import standin, zos_standin  # noqa: F401  (fixtures)

DATA = yaml.safe_load((Path(__file__).parent / "data" / "db2_nano_timestamps.yaml").read_text())
COLUMNS = DATA["columns"]
TOPIC = "mydatabase.MYSCHEMA.NANOS"
SIGNAL = [("ID", "VARCHAR(42) NOT NULL"), ("TYPE", "VARCHAR(32) NOT NULL"), ("DATA", "VARCHAR(2048)")]


def _insert(standin, ids: tuple[int, int]) -> None:
    for n, row_id in enumerate(ids):
        names = ", ".join(f'"{c["column"]}"' for c in COLUMNS)
        standin.execute(f'INSERT INTO "MYSCHEMA"."NANOS" ("ID", {names}) VALUES (%s{", %s" * len(COLUMNS)})',
                        (row_id, *[c["rows"][n] for c in COLUMNS]))


def _table(standin) -> None:
    standin.create_table("MYSCHEMA", "NANOS", [("ID", "INTEGER NOT NULL")] + [(c["column"], c["type"]) for c in COLUMNS],
                         key=["ID"])
    _insert(standin, (1, 2))


def test_the_standin_answers_as_db2_and_ibm_db(standin):
    """A plain SELECT gives ibm_db's datetime (microseconds), VARCHAR(col) Db2's string with p digits."""
    _table(standin)
    conn = dbapi.connect(f"DATABASE={standin.dbname};HOSTNAME={standin.pg.host};PORT={standin.pg.port}",
                         standin.pg.user)
    try:
        cur = conn.cursor()
        cur.execute('SELECT "P9", VARCHAR("P9"), "P12", VARCHAR("P12"), VARCHAR("P7"), VARCHAR("P9ISO") '
                    'FROM "MYSCHEMA"."NANOS" WHERE "ID" = 1')
        assert cur.fetchone() == (
            datetime(2018, 6, 20, 15, 13, 16, 945104), "2018-06-20-15.13.16.945104789",
            datetime(2018, 6, 20, 15, 13, 16, 945104), "2018-06-20-15.13.16.945104789123",
            "2018-06-20-15.13.16.9451047", "2018-06-20-15.13.16.100000000")
        cur.execute("SELECT colname, \"DEFAULT\" FROM syscat.columns WHERE tabname = 'NANOS' AND colname LIKE 'D%'")
        assert dict(cur.fetchall()) == {"D9": "'2018-06-20-15.13.16.945104789'",
                                        "D12": "'1969-12-31-23.59.59.999999999999'", "DNOW": "CURRENT TIMESTAMP"}
    finally:
        conn.close()


@pytest.mark.parametrize("mode", list(DATA["modes"]))
def test_timestamps_of_every_precision_in_snapshot_and_streaming(standin, mode):
    _snapshot_and_streaming(standin, mode)


def test_timestamps_on_the_zos_catalog(zos_standin):
    """db2.platform=ZOS: SYSIBM.SYSCOLUMNS' TIMESTMP with its SCALE, the same VARCHAR(col) and values."""
    _snapshot_and_streaming(zos_standin, "adaptive", {"db2.platform": "ZOS"})


def _snapshot_and_streaming(standin, mode: str, extra: dict | None = None) -> None:
    _table(standin)
    standin.add_table("MYSCHEMA", "NANOS")
    standin.agent.start()

    def writes() -> None:
        _insert(standin, (11, 12))
        sets = ", ".join(f'"{c["column"]}" = %s' for c in COLUMNS)
        standin.execute(f'UPDATE "MYSCHEMA"."NANOS" SET {sets} WHERE "ID" = 11', tuple(c["rows"][1] for c in COLUMNS))

    records = run_until(standin.properties(**DATA["modes"][mode], **(extra or {})),
                        lambda rs: len([r for r in rs if r.topic == TOPIC]) >= 5, "2 snapshot rows, 2 inserts, 1 update",
                        action=writes).records
    # tableChanges as JCC describes the columns (COLUMN_SIZE 20+p, DECIMAL_DIGITS p; cdc_db2.jdbc), which a restart
    # reads back from the schema history (the precision, so the VARCHAR read, survives it).
    [create] = [r for r in records if r.topic == "mydatabase"]
    columns = {c["name"]: c for c in create.value["tableChanges"][0]["table"]["columns"]}
    assert [(columns[n]["typeName"], columns[n]["length"], columns[n].get("scale")) for n in ("P0", "P7", "P9", "P12")] == [
        ("TIMESTAMP", 19, 0), ("TIMESTAMP", 27, 7), ("TIMESTAMP", 29, 9), ("TIMESTAMP", 32, 12)]
    events = [r for r in records if r.topic == TOPIC]
    assert [(e.value["op"], e.value["after"]["ID"]) for e in events] == [("r", 1), ("r", 2), ("c", 11), ("c", 12),
                                                                           ("u", 11)]
    for event in events:
        fields = {f["field"]: f for f in event.value_schema.to_json()["fields"][1]["fields"]}
        for c in COLUMNS:
            name, first, second = c["expected"][mode]
            assert (fields[c["column"]]["type"], fields[c["column"]].get("name")) == ("int64", name), c["column"]
            assert fields[c["column"]].get("default") == (c.get("default") or {}).get(mode), c["column"]
            row = 1 if event.value["after"]["ID"] in (1, 11) else 2
            expected = second if event.value["op"] == "u" or row == 2 else first
            assert event.value["after"][c["column"]] == expected, (event.value["op"], c["column"])
            if event.value["op"] == "u":
                assert event.value["before"][c["column"]] == first, c["column"]


def test_incremental_snapshot_chunks_keep_the_nanoseconds(standin):
    _table(standin)
    standin.create_table("MYSCHEMA", "DEBEZIUM_SIGNAL", SIGNAL, key=["ID"])
    standin.add_table("MYSCHEMA", "NANOS")
    standin.add_table("MYSCHEMA", "DEBEZIUM_SIGNAL")
    standin.agent.start()
    config = standin.properties(**{"signal.data.collection": "MYSCHEMA.DEBEZIUM_SIGNAL", "snapshot.mode": "no_data",
                                   "table.include.list": "MYSCHEMA.NANOS", "incremental.snapshot.chunk.size": 1})
    data = json.dumps({"data-collections": ["MYSCHEMA.NANOS"], "type": "incremental"})
    records = run_until(config, lambda rs: len([r for r in rs if r.topic == TOPIC]) >= 2, "the 2 rows read again",
                        action=lambda: standin.execute('INSERT INTO "MYSCHEMA"."DEBEZIUM_SIGNAL" VALUES (%s, %s, %s)',
                                                       ("ad-hoc-1", "execute-snapshot", data))).records
    reads = [r.value for r in records if r.topic == TOPIC]
    assert [(v["op"], v["source"]["snapshot"]) for v in reads] == [("r", "incremental")] * 2
    for v, n in zip(reads, (1, 2)):
        assert {c["column"]: v["after"][c["column"]] for c in COLUMNS} == {
            c["column"]: c["expected"]["adaptive"][n] for c in COLUMNS}


def test_incremental_snapshot_over_a_timestamp_9_key(standin):
    """A TIMESTAMP(9) primary key, rows a nanosecond apart, chunks of one row: every chunk's bounds (the largest key
    read first, then each chunk's last) keep the nanoseconds, so each row is read once, in key order."""
    keys = ["2018-06-20-15.13.16.945104789", "2018-06-20-15.13.16.945104790", "2018-06-20-15.13.16.945104791"]
    standin.create_table("MYSCHEMA", "TSKEY", [("K", "TIMESTAMP(9) NOT NULL"), ("V", "INTEGER")], key=["K"])
    for n, k in enumerate(keys):
        standin.execute('INSERT INTO "MYSCHEMA"."TSKEY" VALUES (%s, %s)', (k, n))
    standin.create_table("MYSCHEMA", "DEBEZIUM_SIGNAL", SIGNAL, key=["ID"])
    standin.add_table("MYSCHEMA", "TSKEY")
    standin.add_table("MYSCHEMA", "DEBEZIUM_SIGNAL")
    standin.agent.start()
    config = standin.properties(**{"signal.data.collection": "MYSCHEMA.DEBEZIUM_SIGNAL", "snapshot.mode": "no_data",
                                   "table.include.list": "MYSCHEMA.TSKEY", "incremental.snapshot.chunk.size": 1})
    data = json.dumps({"data-collections": ["MYSCHEMA.TSKEY"], "type": "incremental"})
    topic = "mydatabase.MYSCHEMA.TSKEY"
    records = run_until(config, lambda rs: len([r for r in rs if r.topic == topic]) >= 3, "the 3 rows", settle=0.5,
                        action=lambda: standin.execute('INSERT INTO "MYSCHEMA"."DEBEZIUM_SIGNAL" VALUES (%s, %s, %s)',
                                                       ("ad-hoc-1", "execute-snapshot", data))).records
    reads = [r for r in records if r.topic == topic]
    assert [(r.key, r.value["after"]["V"]) for r in reads] == [
        ({"K": 1529507596945104789}, 0), ({"K": 1529507596945104790}, 1), ({"K": 1529507596945104791}, 2)]
