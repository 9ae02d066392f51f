"""AS-35..AS-38 from byte streams built to yboutput's format, decoded by the connector's own stream reader.

The table is real (its catalog gives the columns' types, as on a live server); the replication
messages are built to the documented protocol (``yb_wire``) and decoded by ``YbOutputStreamReader``
(yboutput) or PostgreSQL's ``StreamReader`` (pgoutput), then made into events by the core and
written by the JSON converter. Each event is checked against the chapter's example field for field
(``data/employee_replica_identity.json``, printing errors fixed, decisions stated in it).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import psycopg
import pytest

from cdc_core.config import Config
from cdc_core.envelope import EventBuilder
from cdc_core.events import ChangeRecord
from cdc_postgres.catalog import Catalog, table_filter
from cdc_postgres.modes import type_modes
from cdc_postgres.streaming import ResumePoint
from cdc_yugabyte.config import for_postgres
from cdc_yugabyte.source import SOURCE_SCHEMA
from cdc_yugabyte.streaming import YbOutputStreamReader, YbStreamReader
from cdc_yugabyte.yboutput import wrapped_table

from yb_run import as_json
from yb_wire import INT4, OMITTED, TEXT, VARCHAR, WireConnection, begin, commit, delete, frames, insert, relation, update

EXPECTED = json.loads((Path(__file__).parent / "data" / "employee_replica_identity.json").read_text())
IDENTITY_CODES = {"CHANGE": "c", "DEFAULT": "d", "FULL": "f", "NOTHING": "n"}
ALICE, BOB = [1001, "Alice", "Packaging"], [1001, "Bob", "Packaging"]


def _wire(identity: str, oid: int) -> list[bytes]:
    """What the server sends for the chapter's INSERT, UPDATE and DELETE under ``identity``."""
    columns = [("employee_id", INT4, identity != "NOTHING"), ("employee_name", VARCHAR, identity == "FULL"),
               ("employee_dept", TEXT, identity == "FULL")]
    out = [relation(oid, "public", "employee", IDENTITY_CODES[identity], columns),
           begin(2000, 500), insert(oid, ALICE), commit(1999, 2000)]
    if identity == "NOTHING":
        return out  # UPDATE and DELETE fail in the database (AS-38)
    if identity == "CHANGE":  # the key and the changed column; no old tuple; delete: the key
        changes = [update(oid, [1001, "Bob", OMITTED]), delete(oid, [1001, None, None])]
    elif identity == "DEFAULT":  # the whole new row, no old one (the chapter's text); delete: the key
        changes = [update(oid, BOB), delete(oid, [1001, None, None])]
    else:
        changes = [update(oid, BOB, ALICE, "O"), delete(oid, BOB, "O")]
    out += [begin(3000, 501), changes[0], commit(2999, 3000), begin(4000, 502), changes[1], commit(3999, 4000)]
    return out


def _events(pg_server, pg_db, identity: str, plugin: str) -> list[dict]:
    """The events the connector's reader and the core make of the wire for ``identity`` and ``plugin``."""
    pg_server.execute("CREATE TABLE employee (employee_id INT PRIMARY KEY, employee_name VARCHAR, employee_dept TEXT)",
                      dbname=pg_db)
    config = Config({"topic.prefix": "dbserver", "database.dbname": pg_db, "plugin.name": plugin})
    with psycopg.connect(pg_server.conninfo(pg_db), autocommit=True) as conn:
        catalog = Catalog(conn, type_modes(for_postgres(config)), table_filter(for_postgres(config)))
        tables = catalog.captured_tables()
        [oid] = tables
        if plugin == "yboutput":
            reader_class, tables = YbOutputStreamReader, {o: wrapped_table(t) for o, t in tables.items()}
        else:
            reader_class = YbStreamReader
        reader = reader_class(WireConnection(frames(_wire(identity, oid))), catalog, tables, "dbserver", pg_db,
                              ResumePoint(None), logging.getLogger("test"))
        changes = reader.read(0.1)
    records = EventBuilder(config, SOURCE_SCHEMA, {"server": "dbserver"}).build(changes)
    return as_json([r for r in records if isinstance(r, ChangeRecord) and r.value is not None])


@pytest.mark.parametrize("case", sorted(k for k in EXPECTED if not k.startswith("_")))
def test_chapter_examples_field_for_field(pg_server, pg_db, case):
    """Every example of the replica-identity matrix: before, after and op as the chapter prints them."""
    identity, plugin = case.split("/")
    events = _events(pg_server, pg_db, identity, plugin)
    expected = EXPECTED[case]
    assert [e["value"]["payload"]["op"] for e in events] == [expected[k]["op"] for k in ("c", "u", "d") if k in expected]
    for event, op in zip(events, ("c", "u", "d")):
        payload, want = event["value"]["payload"], expected[op]
        assert payload["source"]["connector"] == "YugabyteDB"
        for side in ("before", "after"):
            got = payload[side]
            if want[side] is None or plugin == "yboutput":
                assert got == want[side], (case, op, side)
            else:  # pgoutput: the struct has every field; those the chapter leaves out are null
                assert {k: v for k, v in got.items() if k in want[side]} == want[side], (case, op, side)
                assert all(v is None for k, v in got.items() if k not in want[side]), (case, op, side)


def test_change_update_schema_and_key(pg_server, pg_db):
    """AS-35: the cells' schema (struct named after the column: value, set) and a key of cells."""
    create, update_, delete_ = _events(pg_server, pg_db, "CHANGE", "yboutput")
    after = next(f for f in update_["value"]["schema"]["fields"] if f["field"] == "after")
    assert [(f["field"], f["name"], f["optional"], [g["field"] for g in f["fields"]]) for f in after["fields"]] == [
        ("employee_id", "employee_id", False, ["value", "set"]),
        ("employee_name", "employee_name", True, ["value", "set"]),
        ("employee_dept", "employee_dept", True, ["value", "set"])]
    assert after["fields"][2]["fields"][0] == {"type": "string", "optional": True, "field": "value"}
    for e in (create, update_, delete_):
        assert e["key"]["payload"] == {"employee_id": {"value": 1001, "set": True}}
    assert update_["value"]["payload"]["source"]["txId"] == 501
    assert update_["value"]["payload"]["source"]["lsn"] == 1005


def test_sql_null_is_a_set_cell_and_omitted_is_null(pg_server, pg_db):
    """``set`` tells a column the change set to NULL from one it did not carry."""
    pg_server.execute("CREATE TABLE employee (employee_id INT PRIMARY KEY, employee_name VARCHAR, employee_dept TEXT)",
                      dbname=pg_db)
    config = Config({"topic.prefix": "dbserver", "database.dbname": pg_db})
    with psycopg.connect(pg_server.conninfo(pg_db), autocommit=True) as conn:
        catalog = Catalog(conn, type_modes(for_postgres(config)), table_filter(for_postgres(config)))
        tables = {o: wrapped_table(t) for o, t in catalog.captured_tables().items()}
        [oid] = tables
        wire = [relation(oid, "public", "employee", "c", [("employee_id", INT4, True), ("employee_name", VARCHAR, False),
                                                           ("employee_dept", TEXT, False)]),
                begin(2000, 500), update(oid, [1001, None, OMITTED]), commit(1999, 2000)]
        reader = YbOutputStreamReader(WireConnection(frames(wire)), catalog, tables, "dbserver", pg_db,
                                      ResumePoint(None), logging.getLogger("test"))
        changes = reader.read(0.1)
    [event] = as_json([r for r in EventBuilder(config, SOURCE_SCHEMA, {"server": "dbserver"}).build(changes)
                       if isinstance(r, ChangeRecord)])
    assert event["value"]["payload"]["after"] == {"employee_id": {"value": 1001, "set": True},
                                                  "employee_name": {"value": None, "set": True},
                                                  "employee_dept": None}
