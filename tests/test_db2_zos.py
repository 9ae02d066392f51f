"""``db2.platform=ZOS`` end to end on a stand-in serving z/OS's catalog: the events are the LUW run's.

The z/OS stand-in has ``SYSIBM.SYSTABLES``/``SYSIBM.SYSCOLUMNS`` (z/OS column names, ``COLTYPE`` codes, LOB
``LENGTH2``, ``DEFAULT`` codes with ``DEFAULTVALUE``) and no ``SYSCAT``, so a connector reading an LUW
catalog object fails there. Both runs capture the same tables and writes: a snapshot, then an insert,
a D+I update, a delete, a ``U``-row update (``CHG_UPD_TO_DEL_INS='N'``) and a type table's update;
everything but the positions, times and database name must be equal.
"""

from __future__ import annotations

from change_table_tests import run as _run
from test_db2_types import TYPES

from cdc_core.config import Config
from cdc_core.spi.chunks import snapshot_chunks_for
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_db2.connector import Db2Connector
from cdc_db2.dialects import ZOs
from cdc_db2.standin.testing import CUSTOMERS, ROWS, standin, zos_inventory, zos_standin  # noqa: F401  (fixtures)

DEFAULTS = [("ID", "INTEGER NOT NULL"), ("N", "INTEGER NOT NULL DEFAULT 5"), ("S", "VARCHAR(10) DEFAULT 'abc'"),
            ("C", "CHAR(4) NOT NULL DEFAULT 'x'"), ("D", "DATE NOT NULL DEFAULT CURRENT DATE"),
            ("T", "TIMESTAMP DEFAULT '2024-01-02-12.30.00'"), ("NL", "INTEGER")]


def _prepare(server) -> None:
    """CUSTOMERS (D+I updates), ORDERS (U rows), TYPES and DEFAULTS, one row each at least, in capture mode."""
    server.create_table("MYSCHEMA", "CUSTOMERS", CUSTOMERS, key=["ID"])
    server.execute(ROWS)
    server.create_table("MYSCHEMA", "ORDERS", [("ID", "INTEGER NOT NULL"), ("QTY", "SMALLINT")], key=["ID"])
    server.execute('INSERT INTO "MYSCHEMA"."ORDERS" VALUES (1, 10)')
    server.create_table("MYSCHEMA", "TYPES", [("ID", "INTEGER NOT NULL")] + [(c, t) for c, t, *_ in TYPES], key=["ID"])
    server.execute(f'INSERT INTO "MYSCHEMA"."TYPES" VALUES (1, {", ".join(lit for _, _, lit, *_ in TYPES)})')
    server.create_table("MYSCHEMA", "DEFAULTS", DEFAULTS, key=["ID"])
    server.execute('INSERT INTO "MYSCHEMA"."DEFAULTS" ("ID") VALUES (1)')
    for table in ("CUSTOMERS", "TYPES", "DEFAULTS"):
        server.add_table("MYSCHEMA", table)
    server.add_table("MYSCHEMA", "ORDERS", delete_insert=False)
    server.agent.start()


def _writes(server) -> None:
    server.execute('INSERT INTO "MYSCHEMA"."CUSTOMERS" ("FIRST_NAME", "LAST_NAME", "EMAIL") '
                   "VALUES ('john', 'doe', 'john.doe@example.org')")
    server.execute('UPDATE "MYSCHEMA"."CUSTOMERS" SET "EMAIL" = \'noreply@example.org\' WHERE "ID" = 1005')
    server.execute('DELETE FROM "MYSCHEMA"."CUSTOMERS" WHERE "ID" = 1005')
    server.execute('UPDATE "MYSCHEMA"."ORDERS" SET "QTY" = 11 WHERE "ID" = 1')
    server.execute('UPDATE "MYSCHEMA"."TYPES" SET "I" = 8, "V" = \'changed\' WHERE "ID" = 1')


def _comparable(record) -> tuple:
    """A record without what differs between two databases: positions, times, the database name."""
    value = record.value
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if k not in ("ts_ms", "ts_us", "ts_ns")}
        if isinstance(value.get("source"), dict):
            value["source"] = {k: v for k, v in value["source"].items()
                               if k not in ("ts_ms", "ts_us", "ts_ns", "db", "change_lsn", "commit_lsn")}
        if "tableChanges" in value:
            value.pop("databaseName", None)
            value.pop("position", None)
    schema = record.value_schema.to_json() if record.value_schema is not None else None
    key = {k: v for k, v in record.key.items() if k != "databaseName"} if isinstance(record.key, dict) else record.key
    return record.topic, key, schema, value


def _events(server, platform: str) -> list[tuple]:
    _prepare(server)
    config = server.properties(**{"db2.platform": platform})
    records = _run(config, MemoryOffsetStore(), lambda rs: sum(r.topic.endswith(".TYPES") for r in rs) >= 2,
                   action=lambda: _writes(server))
    return [_comparable(r) for r in records]


def test_zos_catalog_snapshot_and_streaming_give_the_luw_events(standin, zos_standin):
    zos = _events(zos_standin, "ZOS")
    luw = _events(standin, "LUW")
    data = [e for e in zos if e[0] != "mydatabase"]
    assert [(e[0].rsplit(".", 1)[1], e[3]["op"] if e[3] else None) for e in data] == [
        ("CUSTOMERS", "r"), ("CUSTOMERS", "r"), ("CUSTOMERS", "r"), ("CUSTOMERS", "r"), ("DEFAULTS", "r"),
        ("ORDERS", "r"), ("TYPES", "r"), ("CUSTOMERS", "c"), ("CUSTOMERS", "u"), ("CUSTOMERS", "d"),
        ("CUSTOMERS", None), ("ORDERS", "u"), ("TYPES", "u")]
    for z, lu in zip(zos, luw):
        assert z == lu
    assert len(zos) == len(luw)


def test_a_zos_connector_reads_only_zos_catalog_objects():
    z = ZOs()
    statements = [z.columns_query(["S"]), z.column_counts_query(["S"]), z.register_query("ASNCDC"),
                  z.max_lsn_query("ASNCDC")]
    assert all("SYSCAT" not in s and s.endswith(" FOR READ ONLY WITH UR") for s in statements)
    assert "SYSIBM.SYSCOLUMNS" in statements[0] and "SYSIBM.SYSTABLES" in statements[0]


def test_zos_snapshot_chunks_cover_every_row_once_and_the_last_row_is_marked(zos_inventory):
    """cdc-spark's chunks on z/OS; 100 rows in chunks of 25: the 100th row is in the last chunk, marked ``last``."""
    zos_inventory.execute('INSERT INTO "MYSCHEMA"."CUSTOMERS" ("FIRST_NAME", "LAST_NAME", "EMAIL") '
                          "SELECT 'f' || g, 'l', 'e' || g || '@x' FROM generate_series(1, 96) g")
    zos_inventory.wait_captured()
    cls = snapshot_chunks_for(Db2Connector)
    config = Config(zos_inventory.properties(**{"db2.platform": "ZOS"}))
    capability = cls(config, None)
    plan = capability.open(for_streaming=True, tables=None, chunk_rows=25)
    try:
        rows = [change for chunk in plan.chunks for batch in cls.read_chunk(config, chunk) for change in batch]
    finally:
        capability.close()
    assert [c.bounds["upto"] for c in plan.chunks] == [[1025], [1050], [1075], None]
    assert sorted(r.after[0] for r in rows) == list(range(1001, 1101))
    assert [r.source["snapshot"] for r in rows].count("last") == 1 and rows[-1].source["snapshot"] == "last"
