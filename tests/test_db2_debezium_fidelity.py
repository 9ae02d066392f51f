"""Debezium 2.7.4's own Db2 test expectations, reproduced by cdc's Db2 connector.

No real Db2 runs here and Debezium's Db2 connector cannot run either, so fidelity comes from what
Debezium's Db2 integration tests (debezium-connector-db2, tag v2.7.4.Final, src/test/java/io/debezium/
connector/db2) assert. Each table below names the test it comes from. Where the stand-in (PostgreSQL)
cannot show a value as Db2 stores it (DECFLOAT's rounding to 16 digits, GRAPHIC, ...), the conversion is
tested directly with the value shape the real ibm_db_dbi returns (DECFLOAT: ``str``, as its
``_fix_return_data_type`` only turns DECIMAL columns into ``Decimal``), and the row says so.
"""

from __future__ import annotations

import base64
from decimal import Decimal

import pytest
from kit.engine import run_until

from cdc_core.type_modes import TypeModes
from cdc_db2.lsn import text
from cdc_db2.source import SOURCE_SCHEMA, source_block
from cdc_db2.standin.testing import standin  # noqa: F401  (fixture)
from cdc_db2.types import ColumnInfo, mapping


def _unscaled(value: str) -> str:
    """``BigDecimal(value).unscaledValue().toByteArray()`` in base64 (the JSON form of Connect bytes)."""
    n = int("".join(map(str, Decimal(value).as_tuple().digits)))
    return base64.b64encode(n.to_bytes(n.bit_length() // 8 + 1, "big", signed=True)).decode()


# -- DatatypesFromSnapshotIT: DECFLOAT under each decimal.handling.mode ------------------------------------------
#: ``INSERT INTO dt_numeric VALUES(1, 1, 3.123456789012345678, 3.012345678901234567890123456789)`` into
#: (df decfloat, df16 decfloat(16), df34 decfloat(34)): Db2 rounds DF16 to 16 digits ("Loss of precision").
#: Column, SYSCAT LENGTH (bytes), the str ibm_db returns, then precise (scale, unscaled), double, string.
#: The stand-in keeps DECFLOAT as PostgreSQL numeric, which does not round to 16 digits: tested directly.
DECFLOATS = [
    ("DF", 16, "1", (0, "1"), 1.0, "1"),
    ("DF16", 8, "3.123456789012346", (15, "3.123456789012346"), 3.123456789012346, "3.123456789012346"),
    ("DF34", 16, "3.012345678901234567890123456789", (30, "3.012345678901234567890123456789"),
     3.012345678901234567890123456789, "3.012345678901234567890123456789"),
]


@pytest.mark.parametrize("column,length,driver_value,precise,double,string", DECFLOATS)
def test_decfloat_values_as_datatypes_from_snapshot_it(column, length, driver_value, precise, double, string):
    info = ColumnInfo(column, 2, "DECFLOAT", length, 0, True)
    schema, convert = mapping(info, TypeModes())
    assert schema.name == "io.debezium.data.VariableScaleDecimal"  # numericTypesPrecise: assertVariableScaleDecimal
    assert convert(driver_value) == {"scale": precise[0], "value": _unscaled(precise[1])}
    schema, convert = mapping(info, TypeModes(decimal_handling="double"))  # numericTypesDouble
    assert (schema.type, convert(driver_value)) == ("float64", double)
    schema, convert = mapping(info, TypeModes(decimal_handling="string"))  # numericTypesString
    assert (schema.type, convert(driver_value)) == ("string", string)


@pytest.mark.parametrize("mode", ["precise", "double", "string"])
def test_datatypes_from_snapshot_it_end_to_end(standin, mode):
    """numericTypesPrecise/-Double/-String: dt_numeric (df decfloat, df16 decfloat(16), df34 decfloat(34)) with
    (1, 1, 3.123456789012345678, 3.012345678901234567890123456789) snapshotted; DF16 lost its precision in Db2
    (the stand-in rounds a DECFLOAT(16) to 16 digits, half even, as Db2 stores it). The stand-in returns a
    Decimal where ibm_db returns a str (the test above)."""
    standin.create_table("DB2INST1", "DT_NUMERIC", [("ID", "INTEGER NOT NULL"), ("DF", "DECFLOAT"),
                                                    ("DF16", "DECFLOAT(16)"), ("DF34", "DECFLOAT(34)")], key=["ID"])
    standin.execute('INSERT INTO "DB2INST1"."DT_NUMERIC" VALUES (1, 1, 3.123456789012345678, '
                    "3.012345678901234567890123456789)")
    standin.add_table("DB2INST1", "DT_NUMERIC")
    standin.agent.start()
    records = run_until(standin.properties("testdb", **{"table.include.list": "db2inst1.dt_numeric",
                                                        "decimal.handling.mode": mode}),
                        lambda rs: any(r.topic == "testdb.DB2INST1.DT_NUMERIC" for r in rs), "the snapshot row").records
    [row] = [r.value["after"] for r in records if r.topic == "testdb.DB2INST1.DT_NUMERIC"]
    for column, _, _, precise, double, string in DECFLOATS:
        expected = {"precise": {"scale": precise[0], "value": _unscaled(precise[1])}, "double": double,
                    "string": string}[mode]
        assert row[column] == expected, column


# -- Db2ConnectorIT.shouldPropagateSourceTypeByDatatype ------------------------------------------------------------
#: dt_table (id int not null, c1 int, c2 int, c3a numeric(5,2), c3b varchar(128), f1 float(10), f2 decimal(8,4))
#: with datatype.propagate.source.type=.+\.NUMERIC,.+\.VARCHAR,.+\.DECIMAL,.+\.REAL: column -> (type, length,
#: scale) parameters (None: no parameters). Db2 catalogs NUMERIC as DECIMAL and FLOAT(10) as REAL (24 bits).
DT_TABLE = [("ID", "INTEGER NOT NULL", None), ("C1", "INTEGER", None), ("C2", "INTEGER", None),
            ("C3A", "NUMERIC(5,2)", ("DECIMAL", "5", "2")), ("C3B", "VARCHAR(128)", ("VARCHAR", "128", None)),
            ("F1", "FLOAT(10)", ("REAL", "24", None)), ("F2", "DECIMAL(8,4)", ("DECIMAL", "8", "4"))]

#: The same table's ``tableChanges`` columns (JCC's TYPE_NAME, DATA_TYPE, COLUMN_SIZE, DECIMAL_DIGITS; see
#: cdc_db2.jdbc), plus the other common types, as Debezium's readTableColumn records them.
JCC_COLUMNS = [
    ("ID", "INTEGER NOT NULL", "INTEGER", 4, 10, 0), ("C3A", "NUMERIC(5,2)", "DECIMAL", 3, 5, 2),
    ("C3B", "VARCHAR(128)", "VARCHAR", 12, 128, None), ("F1", "FLOAT(10)", "REAL", 7, 24, None),
    ("SI", "SMALLINT", "SMALLINT", 5, 5, 0), ("BI", "BIGINT", "BIGINT", -5, 19, 0),
    ("DB", "DOUBLE", "DOUBLE", 8, 53, None), ("DF", "DECFLOAT", "DECFLOAT", 1111, 34, None),
    ("DF16", "DECFLOAT(16)", "DECFLOAT", 1111, 16, None), ("CH", "CHAR(5)", "CHAR", 1, 5, None),
    ("FB", "VARCHAR(4) FOR BIT DATA", "VARCHAR () FOR BIT DATA", -3, 4, None),
    ("CB", "CHAR(2) FOR BIT DATA", "CHAR () FOR BIT DATA", -2, 2, None),
    ("DA", "DATE", "DATE", 91, 10, None), ("TI", "TIME", "TIME", 92, 8, 0),
    ("TS", "TIMESTAMP", "TIMESTAMP", 93, 26, 6), ("TS3", "TIMESTAMP(3)", "TIMESTAMP", 93, 23, 3),
    ("BL", "BLOB(1024)", "BLOB", 2004, 1024, None), ("X", "XML", "XML", 2009, 0, None),
    ("BO", "BOOLEAN", "BOOLEAN", 16, 1, None),
]


def test_source_types_and_table_changes_as_the_jdbc_driver_reports_them(standin):
    definitions = {c: t for c, t, *_ in DT_TABLE} | {c: t for c, t, *_ in JCC_COLUMNS}
    standin.create_table("DB2INST1", "DT_TABLE", list(definitions.items()), key=["ID"])
    standin.add_table("DB2INST1", "DT_TABLE")
    standin.agent.start()
    config = standin.properties("testdb", **{
        "snapshot.mode": "no_data", "datatype.propagate.source.type": r".+\.NUMERIC,.+\.VARCHAR,.+\.DECIMAL,.+\.REAL"})
    records = run_until(config, lambda rs: any(r.topic.endswith("DT_TABLE") for r in rs), "the insert", action=lambda:
                        standin.execute('INSERT INTO "DB2INST1"."DT_TABLE" ("ID", "C1", "C2", "C3A", "C3B", "F1", "F2") '
                                        "VALUES (1, 123, 456, 789.01, 'test', 1.228, 234.56)")).records
    [record] = [r for r in records if r.topic == "testdb.DB2INST1.DT_TABLE"]
    before = {f["field"]: f for f in record.value_schema.to_json()["fields"][0]["fields"]}
    for column, _, expected in DT_TABLE:
        parameters = before[column].get("parameters")
        if expected is None:
            assert parameters is None, column
            continue
        wanted = dict(zip(("__debezium.source.column.type", "__debezium.source.column.length",
                           "__debezium.source.column.scale"), expected))
        assert {k: parameters.get(k) for k in wanted} == wanted, column

    history_run = run_until(standin.properties("testdb", **{"snapshot.mode": "initial_only"}),
                            lambda rs: any(r.topic == "testdb" for r in rs), "the snapshot's schema change event")
    [change] = [r for r in history_run.records if r.topic == "testdb"]
    columns = {c["name"]: c for c in change.value["tableChanges"][0]["table"]["columns"]}
    for column, _, type_name, jdbc, size, digits in JCC_COLUMNS:
        c = columns[column]
        assert (c["typeName"], c["typeExpression"], c["jdbcType"], c["length"], c["scale"]) == (
            type_name, type_name, jdbc, size, digits), column


# -- SourceInfoTest ---------------------------------------------------------------------------------------------------
def test_source_block_as_source_info_test():
    """SourceInfoTest: the schema's fields in order, Lsn.toString of short LSNs, snapshot "true", ts_ms."""
    fields = [(f["field"], f["type"], f["optional"]) for f in SOURCE_SCHEMA.to_json()["fields"]]
    assert fields == [("version", "string", False), ("connector", "string", False), ("name", "string", False),
                      ("ts_ms", "int64", False), ("snapshot", "string", True), ("db", "string", False),
                      ("sequence", "string", True), ("ts_us", "int64", True), ("ts_ns", "int64", True),
                      ("schema", "string", False), ("table", "string", False), ("change_lsn", "string", True),
                      ("commit_lsn", "string", True)]
    assert SOURCE_SCHEMA.to_json()["name"] == "io.debezium.connector.db2.Source"
    # Lsn.valueOf(new byte[]{ 0x01 }).toString(): a ':' only after the 4th and 8th byte.
    assert (text(b"\x01"), text(b"\x02")) == ("01", "02")
    block = source_block("serverX", "c", 3_000_000, "true", "s", "t", text(b"\x01"), text(b"\x02"))
    assert {k: block[k] for k in ("connector", "name", "ts_ms", "snapshot", "db", "schema", "table", "change_lsn",
                                  "commit_lsn")} == {"connector": "db2", "name": "serverX", "ts_ms": 3000,
                                                     "snapshot": "true", "db": "c", "schema": "s", "table": "t",
                                                     "change_lsn": "01", "commit_lsn": "02"}


# AbstractDb2DefaultValueIT (Db2OfflineDefaultValueIT, ZZZDb2OnlineDefaultValueIT): tests/test_db2_default_value_it.py.
# Db2ConnectionIT.shouldEnableCdcForDatabase is not ported: it runs only the IT's TestHelper.enableDbCdc (VALUES
# ASNCDC.ASNCDCSERVICES('start','asncdc') until the status says "is doing work") on an admin connection, nothing
# of the connector; the stand-in's asncap is a thread its fixtures start (the UDF's 'start' answers the command
# text only), and the connector's use of the status answer is tested in tests/test_db2_stream.py
# (test_capture_service_stopped_is_a_clear_error_then_streaming_resumes).


# -- Db2ConnectorIT: verifyOffsets, updatePrimaryKey, deleteWithoutTombstone -----------------------------------------
def _tables(standin):
    """Db2ConnectorIT's tablea (row 1, 'a') and tableb, in capture mode."""
    for name, column in (("TABLEA", "COLA"), ("TABLEB", "COLB")):
        standin.create_table("DB2INST1", name, [("ID", "INTEGER NOT NULL"), (column, "VARCHAR(30)")], key=["ID"])
        standin.add_table("DB2INST1", name)
    standin.execute("INSERT INTO \"DB2INST1\".\"TABLEA\" VALUES (1, 'a')")
    standin.agent.start()
    standin.wait_captured()  # row 1 below the snapshot's synchpoint: a read, never streamed


def test_offsets_as_verify_offsets(standin):
    """verifyOffsets: snapshot records' offsets say snapshot=true and snapshot_completed=false but the last (true);
    streamed ones have neither key and a change_lsn."""
    _tables(standin)
    for i in range(10, 15):
        standin.execute(f"INSERT INTO \"DB2INST1\".\"TABLEA\" VALUES ({i}, 'a'); "
                        f"INSERT INTO \"DB2INST1\".\"TABLEB\" VALUES ({i}, 'b')")
    standin.wait_captured()

    def streamed(rs):
        return [r for r in rs if r.topic.startswith("testdb.DB2INST1.") and r.value and r.value["op"] == "c"]

    def writes():
        for i in range(100, 105):
            standin.execute(f"INSERT INTO \"DB2INST1\".\"TABLEA\" VALUES ({i}, 'a'); "
                            f"INSERT INTO \"DB2INST1\".\"TABLEB\" VALUES ({i}, 'b')")

    records = run_until(standin.properties("testdb"), lambda rs: len(streamed(rs)) >= 10, "10 streamed inserts",
                        action=writes).records
    snapshot = [r for r in records if r.topic.startswith("testdb.DB2INST1.") and r.value["op"] == "r"]
    assert len(snapshot) == 11
    assert [r.offset["snapshot"] for r in snapshot] == [True] * 11
    assert [r.offset["snapshot_completed"] for r in snapshot] == [False] * 10 + [True]
    for r in streamed(records):
        assert "snapshot" not in r.offset and "snapshot_completed" not in r.offset and r.offset["change_lsn"], r.offset
    a = [r.value["after"] for r in streamed(records) if r.topic.endswith("TABLEA")]
    assert a == [{"ID": i, "COLA": "a"} for i in range(100, 105)]


def test_primary_key_update_as_update_primary_key(standin):
    """updatePrimaryKey: an update of the key is a delete (before), a tombstone (old key), a create (new key)."""
    _tables(standin)
    standin.execute("INSERT INTO \"DB2INST1\".\"TABLEB\" VALUES (1, 'b')")
    standin.wait_captured()

    def mine(rs):
        return [r for r in rs if r.topic in ("testdb.DB2INST1.TABLEA", "testdb.DB2INST1.TABLEB")
                and (r.value is None or r.value["op"] != "r")]

    records = run_until(standin.properties("testdb", **{"snapshot.mode": "no_data"}), lambda rs: len(mine(rs)) >= 6,
                        "3 records per table", action=lambda: standin.execute(
                            'BEGIN; UPDATE "DB2INST1"."TABLEA" SET "ID" = 100 WHERE "ID" = 1; '
                            'UPDATE "DB2INST1"."TABLEB" SET "ID" = 100 WHERE "ID" = 1; COMMIT')).records
    for table, column, value in (("TABLEA", "COLA", "a"), ("TABLEB", "COLB", "b")):
        delete, tombstone, create = [r for r in mine(records) if r.topic.endswith(table)]
        assert (delete.key, delete.value["op"], delete.value["before"], delete.value["after"]) == (
            {"ID": 1}, "d", {"ID": 1, column: value}, None)
        assert (tombstone.key, tombstone.value) == ({"ID": 1}, None)
        assert (create.key, create.value["op"], create.value["before"], create.value["after"]) == (
            {"ID": 100}, "c", None, {"ID": 100, column: value})


def test_delete_without_tombstone(standin):
    """deleteWithoutTombstone: tombstones.on.delete=false leaves only the deletes, their before images whole."""
    _tables(standin)
    for i in range(10, 15):
        standin.execute(f"INSERT INTO \"DB2INST1\".\"TABLEB\" VALUES ({i}, 'b')")
    standin.wait_captured()
    records = run_until(standin.properties("testdb", **{"snapshot.mode": "no_data", "tombstones.on.delete": "false"}),
                        lambda rs: len([r for r in rs if r.topic.endswith("TABLEB")]) >= 5, "5 deletes", settle=0.5,
                        action=lambda: standin.execute('DELETE FROM "DB2INST1"."TABLEB"')).records
    deletes = [r for r in records if r.topic.startswith("testdb.DB2INST1.")]
    assert [(r.topic, r.value["op"], r.value["before"], r.value["after"]) for r in deletes] == [
        ("testdb.DB2INST1.TABLEB", "d", {"ID": i, "COLB": "b"}, None) for i in range(10, 15)]
    # no_data still snapshots the schema (RelationalSnapshotChangeEventSource with snapshotData false): a CREATE per
    # table, the last one's source.snapshot "last" (lastSnapshotRecord), recorded in the schema history too.
    schema = [(r.value["tableChanges"][0]["id"], r.value["source"]["snapshot"]) for r in records if r.topic == "testdb"]
    assert schema == [('"DB2INST1"."TABLEA"', "true"), ('"DB2INST1"."TABLEB"', "last")]


# -- TransactionMetadataIT ----------------------------------------------------------------------------------------------
def test_transaction_metadata_as_transaction_metadata_it(standin):
    """Five inserts into each of tablea and tableb in one transaction, then one insert in its own: BEGIN, the ten
    events numbered (total_order 1..10, data_collection_order 1,1,2,2,...), END (10 events, 5 per table), BEGIN,
    the last event. The second transaction's END is not sent: the Db2 connector reports no commit, so an END
    comes with the next transaction's first event (TransactionMonitor.dataEvent). The id is the commit LSN
    (Db2EventMetadataProvider.getTransactionId)."""
    _tables(standin)
    inserts = "; ".join(f"INSERT INTO \"DB2INST1\".\"TABLE{t.upper()}\" VALUES ({i}, '{t}')"
                        for i in range(10, 15) for t in ("a", "b"))

    def ours(rs):
        return [r for r in rs if r.topic == "testdb.transaction" or
                (r.topic.startswith("testdb.DB2INST1.") and r.value and r.value["op"] != "r")]

    records = run_until(standin.properties("testdb", **{"provide.transaction.metadata": "true"}),
                        lambda rs: len(ours(rs)) >= 14, "BEGIN, 10 events, END, BEGIN, 1 event", settle=0.5,
                        action=lambda: standin.execute(
                            f"BEGIN; {inserts}; COMMIT; INSERT INTO \"DB2INST1\".\"TABLEB\" VALUES (1000, 'b')")).records
    all_ = ours(records)
    assert len(all_) == 14 and len([r for r in all_ if r.topic == "testdb.transaction"]) == 3
    begin, end = all_[0].value, all_[11].value
    tx_id = begin["id"]
    assert (begin["status"], begin["event_count"], begin["data_collections"]) == ("BEGIN", None, None)
    assert all_[0].key == {"id": tx_id}
    for counter, record in enumerate(all_[1:11], 1):
        assert record.value["transaction"] == {"id": tx_id, "total_order": counter,
                                               "data_collection_order": (counter + 1) // 2}
        assert record.value["source"]["commit_lsn"] == tx_id
    assert (end["status"], end["id"], end["event_count"]) == ("END", tx_id, 10)
    assert {c["data_collection"]: c["event_count"] for c in end["data_collections"]} == {
        "DB2INST1.TABLEA": 5, "DB2INST1.TABLEB": 5}
    assert all_[12].value["status"] == "BEGIN" and all_[12].value["id"] != tx_id
    # The END's ts_ms is the time of the event that ends it (TransactionMonitor.endTransaction's timestamp).
    assert end["ts_ms"] == all_[13].value["source"]["ts_ms"] == all_[12].value["ts_ms"]
    assert all_[13].value["after"] == {"ID": 1000, "COLB": "b"}
    assert all_[13].value["transaction"] == {"id": all_[12].value["id"], "total_order": 1, "data_collection_order": 1}


# -- Db2ConnectorIT: shouldOutputRecordsInCloudEventsFormat, shouldConsumeEventsWithMaskedAndTruncatedColumns,
#    shouldRewriteIdentityKey ------------------------------------------------------------------------------------------
def test_cloudevents_masks_and_key_columns_as_db2_connector_it(standin):
    import json

    from cdc_core.serializers.cloudevents import CloudEventsConverter

    _tables(standin)
    standin.create_table("DB2INST1", "MASKED_HASHED_COLUMN_TABLE", [
        ("ID", "INTEGER NOT NULL"), ("NAME", "VARCHAR(255)"), ("NAME2", "VARCHAR(255)"), ("NAME3", "VARCHAR(20)")],
        key=["ID"])
    standin.create_table("DB2INST1", "TRUNCATED_COLUMN_TABLE", [("ID", "INTEGER NOT NULL"), ("NAME", "VARCHAR(20)")],
                         key=["ID"])
    for table in ("MASKED_HASHED_COLUMN_TABLE", "TRUNCATED_COLUMN_TABLE"):
        standin.add_table("DB2INST1", table)
    standin.execute("INSERT INTO \"DB2INST1\".\"TABLEA\" VALUES (1001, 'DBZ3668')")
    standin.wait_captured()  # below the snapshot's synchpoint: read by the snapshot, not streamed again
    config = standin.properties("testdb", **{
        "column.mask.with.12.chars": "DB2INST1.MASKED_HASHED_COLUMN_TABLE.NAME",
        "column.mask.hash.SHA-256.with.salt.CzQMA0cB5K":
            "DB2INST1.MASKED_HASHED_COLUMN_TABLE.NAME2,DB2INST1.MASKED_HASHED_COLUMN_TABLE.NAME3",
        "column.truncate.to.4.chars": "DB2INST1.TRUNCATED_COLUMN_TABLE.NAME",
        "message.key.columns": "(.*).tablea:id,cola"})

    def streamed(rs):
        return [r for r in rs if r.topic.startswith("testdb.DB2INST1.") and r.value and r.value["op"] == "c"]

    records = run_until(config, lambda rs: len(streamed(rs)) >= 3, "the three inserts", action=lambda: standin.execute(
        "INSERT INTO \"DB2INST1\".\"MASKED_HASHED_COLUMN_TABLE\" VALUES (10, 'some_name', 'test', 'test'); "
        "INSERT INTO \"DB2INST1\".\"TRUNCATED_COLUMN_TABLE\" VALUES (11, 'some_name'); "
        "INSERT INTO \"DB2INST1\".\"TABLEA\" VALUES (1002, 'DBZ3668')")).records
    masked, truncated, tablea = streamed(records)
    assert {k: masked.value["after"][k] for k in ("NAME", "NAME2", "NAME3")} == {
        "NAME": "************", "NAME2": "8e68c68edbbac316dfe2f6ada6b0d2d3e2002b487a985d4b7c7c82dd83b0f4d7",
        "NAME3": "8e68c68edbbac316dfe2"}
    assert truncated.value["after"]["NAME"] == "some"
    assert tablea.key == {"ID": 1002, "COLA": "DBZ3668"}  # (.*).tablea:id,cola, matched in any case
    # CloudEvents: Db2CloudEventsMaker's id, name:<prefix>;change_lsn:<lsn>;commit_lsn:<lsn>; data before/after.
    snapshot_row = next(r for r in records if r.topic == "testdb.DB2INST1.TABLEA" and r.value["op"] == "r")
    for record in (snapshot_row, tablea):
        event = json.loads(CloudEventsConverter()([record])[0])
        source = record.value["source"]
        assert event["id"] == f"name:testdb;change_lsn:{source['change_lsn'] or 'null'};commit_lsn:{source['commit_lsn']}"
        assert (event["source"], event["type"]) == ("/debezium/db2/testdb", "io.debezium.connector.db2.DataChangeEvent")
        assert [f["field"] for f in event["data"]["schema"]["fields"]] == ["before", "after"]
    assert "commit_lsn:" in json.loads(CloudEventsConverter()([tablea])[0])["id"]


# -- Db2ConnectorIT.testTableIncludeList / testTableExcludeList, Db2CaseSensitiveObjectIT ----------------------------
@pytest.mark.parametrize("filters", [{"table.include.list": "db2inst1.tableb", "snapshot.mode": "no_data"},
                                     {"table.exclude.list": "db2inst1.tablea"}], ids=["include", "exclude"])
def test_table_filters_as_db2_connector_it(standin, filters):
    """Lower-case regexes match DB2INST1.TABLEB (Debezium compiles every regex list CASE_INSENSITIVE): only
    tableb's five inserts stream."""
    _tables(standin)

    def writes():
        for i in range(10, 15):
            standin.execute(f"INSERT INTO \"DB2INST1\".\"TABLEA\" VALUES ({i}, 'a'); "
                            f"INSERT INTO \"DB2INST1\".\"TABLEB\" VALUES ({i}, 'b')")

    records = run_until(standin.properties("testdb", **filters),
                        lambda rs: len([r for r in rs if r.topic.endswith("TABLEB")]) >= 5, "tableb's inserts",
                        action=writes, settle=0.5).records
    data = [r for r in records if r.topic.startswith("testdb.DB2INST1.")]
    assert [(r.topic, r.value["after"]["ID"]) for r in data] == [("testdb.DB2INST1.TABLEB", i) for i in range(10, 15)]


def test_case_sensitive_schema_and_table(standin):
    """Db2CaseSensitiveObjectIT: "testSchema"."tablea", include list testSchema.tablea, topic testdb.testSchema.tablea."""
    standin.create_table("testSchema", "tablea", [("ID", "INTEGER NOT NULL"), ("COLA", "VARCHAR(30)")], key=["ID"])
    standin.execute("INSERT INTO \"testSchema\".\"tablea\" VALUES (1, 'a')")
    standin.add_table("testSchema", "tablea")
    standin.agent.start()

    def writes():
        for i in range(10, 15):
            standin.execute(f"INSERT INTO \"testSchema\".\"tablea\" VALUES ({i}, 'a')")

    records = run_until(standin.properties("testdb", **{"table.include.list": "testSchema.tablea"}),
                        lambda rs: len([r for r in rs if r.topic == "testdb.testSchema.tablea"]) >= 6,
                        "the snapshot row and 5 inserts", action=writes).records
    ops = [(r.value["op"], r.value["after"]["ID"]) for r in records if r.topic == "testdb.testSchema.tablea"]
    assert ops == [("r", 1)] + [("c", i) for i in range(10, 15)]


# -- SchemaHistoryTopicIT.snapshotSchemaChanges -------------------------------------------------------------------------
def test_snapshot_schema_changes_as_schema_history_topic_it(standin):
    """tablea and tableb in capture mode with 5 rows each, tablec not in capture mode: the snapshot's schema change
    events are 3 CREATEs (tablec's too: Debezium snapshots every table its filters include), on topic testdb, keyed
    by the database's real name TESTDB (CURRENT SERVER; database.dbname is testdb), offset and source snapshot true;
    then 5 rows of each captured table, their after schema testdb.DB2INST1.TABLEB.Value {ID int32, COLB string?}."""
    for name, column in (("TABLEA", "COLA"), ("TABLEB", "COLB"), ("TABLEC", "COLC")):
        standin.create_table("DB2INST1", name, [("ID", "INTEGER NOT NULL"), (column, "VARCHAR(30)")], key=["ID"])
    for name in ("TABLEA", "TABLEB"):
        standin.add_table("DB2INST1", name)
    for i in range(10, 15):
        standin.execute(f"INSERT INTO \"DB2INST1\".\"TABLEA\" VALUES ({i}, 'a'); "
                        f"INSERT INTO \"DB2INST1\".\"TABLEB\" VALUES ({i}, 'b')")
    standin.agent.start()
    standin.wait_captured()
    records = run_until(standin.properties("testdb", **{"snapshot.mode": "initial_only",
                                                        "include.schema.changes": "true"}),
                        lambda rs: len([r for r in rs if r.topic.startswith("testdb.DB2INST1.")]) >= 10,
                        "the snapshot").records
    real = standin.execute("SELECT upper(current_database())")[0][0]  # the stand-in's CURRENT SERVER
    schema_records = [r for r in records if r.topic == "testdb"]
    assert len(schema_records) == 3
    for r in schema_records:
        assert (r.key["databaseName"], r.offset["snapshot"], r.value["source"]["snapshot"]) == (real, True, "true")
        [change] = r.value["tableChanges"]
        assert change["type"] == "CREATE"
    assert [r.value["tableChanges"][0]["id"] for r in schema_records] == [
        '"DB2INST1"."TABLEA"', '"DB2INST1"."TABLEB"', '"DB2INST1"."TABLEC"']
    data = [r for r in records if r.topic.startswith("testdb.DB2INST1.")]
    assert sorted(r.topic for r in data) == ["testdb.DB2INST1.TABLEA"] * 5 + ["testdb.DB2INST1.TABLEB"] * 5
    b = next(r for r in data if r.topic == "testdb.DB2INST1.TABLEB")
    after = b.value_schema.to_json()["fields"][1]
    assert (after["name"], after["optional"]) == ("testdb.DB2INST1.TABLEB.Value", True)
    assert [(f["field"], f["type"], f["optional"]) for f in after["fields"]] == [
        ("ID", "int32", False), ("COLB", "string", True)]


# -- Db2StreamingChangeEventSource's positions (source, not a test: updatePrimaryKey's event_serial_no asserts are
#    commented out there) --------------------------------------------------------------------------------------------
def test_an_updates_position_is_its_after_images_as_debezium_sets_it(standin):
    """An update (a D row and an I row) is dispatched after the cursor moved to the I row, with an event count of
    2 (offsetContext.setChangePosition(pointer position, 2)): change_lsn the I row's INTENTSEQ, event_serial_no 2;
    an insert's is its own row's, 1."""
    _tables(standin)

    def ours(rs):
        return [r for r in rs if r.topic == "testdb.DB2INST1.TABLEA" and r.value and r.value["op"] in "cu"]

    records = run_until(standin.properties("testdb", **{"snapshot.mode": "no_data"}), lambda rs: len(ours(rs)) >= 2,
                        "the update and the insert", action=lambda: standin.execute(
                            "UPDATE \"DB2INST1\".\"TABLEA\" SET \"COLA\" = 'b' WHERE \"ID\" = 1; "
                            "INSERT INTO \"DB2INST1\".\"TABLEA\" VALUES (2, 'c')")).records
    update, insert = ours(records)
    cd_table = standin.execute("SELECT cd_table FROM asncdc.ibmsnap_register WHERE source_table = 'TABLEA'")[0][0]
    rows = standin.execute(f'SELECT ibmsnap_intentseq, ibmsnap_operation FROM "ASNCDC"."{cd_table}" '
                           "ORDER BY ibmsnap_commitseq, ibmsnap_intentseq")
    (d, op_d), (i, op_i), (c, op_c) = [(text(bytes(r[0])), r[1].strip()) for r in rows[-3:]]  # row 1's insert first
    assert (op_d, op_i, op_c) == ("D", "I", "I")
    assert (update.value["source"]["change_lsn"], update.offset["change_lsn"], update.offset["event_serial_no"]) == (
        i, i, 2)
    assert (insert.value["source"]["change_lsn"], insert.offset["event_serial_no"]) == (c, 1)


def test_adaptive_time_microseconds_as_jdbc_value_converters():
    """Debezium 2.7.4's Db2 connector takes the common time.precision.mode, adaptive_time_microseconds included:
    JdbcValueConverters makes TIME a MicroTime, DATE and TIMESTAMP(p) as under adaptive (driver values: date,
    time, datetime)."""
    from datetime import date, datetime, time

    modes = TypeModes(time_precision="adaptive_time_microseconds")
    cases = [(ColumnInfo("T", 1, "TIME", 3, 0, True), time(1, 2, 3), "io.debezium.time.MicroTime", 3_723_000_000),
             (ColumnInfo("D", 2, "DATE", 4, 0, True), date(2022, 1, 1), "io.debezium.time.Date", 18993),
             (ColumnInfo("TS", 3, "TIMESTAMP", 10, 6, True), datetime(2022, 1, 1, 1, 2, 3),
              "io.debezium.time.MicroTimestamp", 1640998923000000)]
    for info, value, name, expected in cases:
        schema, convert = mapping(info, modes)
        assert (schema.name, convert(value)) == (name, expected), info.name


# -- Db2ConnectorIT.shouldCreateSnapshotSchemaOnlyRecovery ------------------------------------------------------------
def test_recovery_rebuilds_the_schema_then_streams(standin):
    """initial, then snapshot.mode=recovery with the same offsets and history: the schema snapshot again (a CREATE
    per table, the last 'last', no rows), then tablea's two inserts stream."""
    from cdc_core.stores.memory_offsets import MemoryOffsetStore
    from cdc_core.stores.memory_history import MemorySchemaHistoryStore

    _tables(standin)
    offsets, history = MemoryOffsetStore(), MemorySchemaHistoryStore()
    config = standin.properties("testdb", **{"table.include.list": "DB2INST1.TABLEA"})
    first = run_until(config, lambda rs: any(r.topic.endswith("TABLEA") for r in rs), "the snapshot row",
                      offsets=offsets, history=history).records
    assert [r.value["op"] for r in first if r.topic.endswith("TABLEA")] == ["r"]
    recovered = run_until({**config, "snapshot.mode": "recovery"},
                          lambda rs: len([r for r in rs if r.topic.endswith("TABLEA")]) >= 2, "two inserts",
                          action=lambda: standin.execute("INSERT INTO \"DB2INST1\".\"TABLEA\" VALUES (100, '100'); "
                                                         "INSERT INTO \"DB2INST1\".\"TABLEA\" VALUES (200, '200')"),
                          offsets=offsets, history=history).records
    schema = [(r.value["tableChanges"][0]["type"], r.value["source"]["snapshot"]) for r in recovered
              if r.topic == "testdb"]
    assert schema == [("CREATE", "last")]
    assert [(r.value["op"], r.value["after"]["ID"]) for r in recovered if r.topic.endswith("TABLEA")] == [
        ("c", 100), ("c", 200)]


def test_empty_schema_warning_after_applying_filters(standin, caplog):
    """Db2ConnectorIT.testEmptySchemaWarningAfterApplyingFilters: table.include.list=my_products matches nothing;
    the connector runs (streaming starts) and warns that no changes will be captured."""
    import logging

    from kit.engine import EngineThread

    _tables(standin)
    with caplog.at_level(logging.WARNING):
        runner = EngineThread(standin.properties("testdb", **{"table.include.list": "my_products"})).start()
        try:
            runner.wait_streaming(20)
            assert runner.alive
        finally:
            runner.stop()
    assert any("no changes will be captured" in r.getMessage() for r in caplog.records)
    assert not [r for r in runner.records if r.topic.startswith("testdb.DB2INST1.")]
