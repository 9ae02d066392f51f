"""Column masking, hashing, truncation, source types, custom keys, converters and name adjustment, end to end."""

from __future__ import annotations

import hashlib
import threading
import time

import pytest

from cdc_core.engine import Engine
from cdc_core.errors import ConfigError, ConnectorError
from cdc_core.stores.memory_offsets import MemoryOffsetStore


def _capture(pg, db, extra: dict, until: int, timeout: float = 30.0):
    config = {"connector.class": "postgres", "database.hostname": pg.host, "database.port": pg.port,
              "database.user": pg.user, "database.dbname": db, "topic.prefix": "cols", "poll.interval.ms": 50, **extra}
    engine = Engine(config, offset_store=MemoryOffsetStore())
    records = []
    error = []

    def run():
        try:
            engine.run(records.extend)
        except Exception as e:  # handed to the test
            error.append(e)

    t = threading.Thread(target=run)
    t.start()
    deadline = time.monotonic() + timeout
    while len(records) < until and t.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    engine.stop()
    t.join(30)
    if error:
        raise error[0]
    return records


def _v2(salt: str, value: str, length: int | None = None) -> str:
    digest = hashlib.sha256((salt + value).encode()).hexdigest()
    return digest[:length] if length else digest


def test_mask_hash_truncate_and_propagate(pg_server, pg_db):
    pg_server.execute(
        "CREATE TABLE people (id int PRIMARY KEY, name varchar(40), secret text, code varchar(10), note text, n numeric(8,3));"
        "INSERT INTO people VALUES (1, 'Anne Kretchmar', 'p@ss', 'ABCDEFGHIJ', 'keep', 1.5)", dbname=pg_db)
    records = _capture(pg_server, pg_db, {
        "column.mask.with.5.chars": "public.people.secret",
        "column.truncate.to.4.chars": "public.people.note",
        "column.mask.hash.v2.SHA-256.with.salt.CzQMA0cB5K": "public.people.name",
        "column.mask.hash.SHA-256.with.salt.salty": "public.people.code",
        "column.propagate.source.type": "public.people.name",
        # Debezium matches schema.table.TYPENAME case-insensitively.
        "datatype.propagate.source.type": r".+\.NUMERIC,.+\.int4",
    }, 1)
    after = records[0].value["after"]
    assert after["secret"] == "*****"
    assert after["note"] == "keep"[:4]
    assert after["name"] == _v2("CzQMA0cB5K", "Anne Kretchmar", 40)
    # v1 digests Java's serialized form of the string, truncated to the column length (10).
    java = b"\xac\xed\x00\x05t" + len(b"ABCDEFGHIJ").to_bytes(2, "big") + b"ABCDEFGHIJ"
    assert after["code"] == hashlib.sha256(b"salty" + java).hexdigest()[:10]
    fields = {f.name: f.schema for f in records[0].value_schema.field("after").schema.fields}
    # PropagateSourceMetadataToSchemaParameter: type, length, scale (pgjdbc's DECIMAL_DIGITS: 0 for
    # varchar), and the column's name, in that order.
    # The name is hashed: MaskStrings.alterFieldSchema adds masked=true.
    assert fields["name"].parameters == {"masked": "true", "__debezium.source.column.type": "VARCHAR",
                                         "__debezium.source.column.length": "40", "__debezium.source.column.scale": "0",
                                         "__debezium.source.column.name": "name"}
    assert fields["n"].parameters == {"scale": "3", "connect.decimal.precision": "8",
                                      "__debezium.source.column.type": "NUMERIC", "__debezium.source.column.length": "8",
                                      "__debezium.source.column.scale": "3", "__debezium.source.column.name": "n"}
    assert fields["id"].parameters["__debezium.source.column.type"] == "INT4"
    # Key fields never get the parameters (Debezium's key schema has no column mappers).
    assert records[0].key_schema.field("id").schema.parameters in (None, {})


def test_message_key_columns_key_a_table_without_primary_key(pg_server, pg_db):
    pg_server.execute("CREATE TABLE log (a int, b text, c text); INSERT INTO log VALUES (1, 'x', 'y')", dbname=pg_db)
    records = _capture(pg_server, pg_db, {"message.key.columns": r"public\.log:a,b"}, 1)
    assert records[0].key == {"a": 1, "b": "x"}
    assert records[0].key_schema.name == "cols.public.log.Key"
    assert [f.name for f in records[0].key_schema.fields] == ["a", "b"]


def test_custom_converter_plugin_from_entry_point(pg_server, pg_db):
    pg_server.execute("CREATE TABLE flags (id int PRIMARY KEY, active boolean, other boolean);"
                      "INSERT INTO flags VALUES (1, true, false)", dbname=pg_db)
    records = _capture(pg_server, pg_db, {
        "converters": "words", "words.type": "boolean-words", "words.true": "oui", "words.false": "non",
        "words.selector": r"public\.flags\.active"}, 1)
    assert records[0].value["after"] == {"id": 1, "active": "oui", "other": False}
    active = records[0].value_schema.field("after").schema.field("active").schema
    assert (active.type, active.name, active.optional) == ("string", "io.example.BooleanWord", True)


def test_bad_converter_and_hash_configuration_is_named():
    base = {"connector.class": "postgres", "database.dbname": "x", "topic.prefix": "p"}
    with pytest.raises(ConfigError) as e:
        Engine({**base, "converters": "a,b", "a.type": "no.such.Module", "column.mask.hash.NOPE.with.salt.s": "x.y.z"})
    problems = "\n".join(e.value.problems)
    assert "a.type: converter 'no.such.Module' failed to load" in problems
    assert "b.type: is required for converter 'b'" in problems
    assert "column.mask.hash.NOPE.with.salt.s: unknown hash algorithm 'NOPE'" in problems
    with pytest.raises(ConfigError) as e:
        Engine({**base, "message.key.columns": "public.t"})
    assert "message.key.columns" in e.value.problems[0]


def test_avro_name_adjustment(pg_server, pg_db):
    pg_server.execute('CREATE TABLE "my-table" (id int PRIMARY KEY, "first-name" text); '
                      "INSERT INTO \"my-table\" VALUES (1, 'a')", dbname=pg_db)
    records = _capture(pg_server, pg_db, {"schema.name.adjustment.mode": "avro", "field.name.adjustment.mode": "avro"}, 1)
    assert records[0].topic == "cols.public.my-table"
    assert records[0].value_schema.name == "cols.public.my_table.Envelope"
    assert records[0].value["after"] == {"id": 1, "first_name": "a"}


@pytest.mark.parametrize("mode", ["fail", "warn"])
def test_event_processing_failure_handling(pg_server, pg_db, mode):
    pg_server.execute("CREATE TABLE nums (id int PRIMARY KEY, v numeric); INSERT INTO nums VALUES (1, 'NaN'), (2, 2)",
                      dbname=pg_db)
    # NaN cannot be written as a precise decimal; with event.converting.failure.handling.mode=fail
    # that fails the change: fail stops the connector, warn skips the change.
    extra = {"event.processing.failure.handling.mode": mode, "event.converting.failure.handling.mode": "fail"}
    if mode == "fail":
        with pytest.raises(ConnectorError, match="event.processing.failure.handling.mode=warn"):
            _capture(pg_server, pg_db, extra, 1, timeout=10)
    else:
        records = _capture(pg_server, pg_db, extra, 1)
        assert [r.value["after"]["id"] for r in records] == [2]


def test_propagated_source_metadata_as_debezium_reads_it_from_catalog_then_from_the_relation(pg_server, pg_db):
    """Snapshot columns carry pgjdbc's getColumns view (serial, unconstrained numeric of size 0 and no
    scale); streamed ones the Relation message's (typname; numeric 131089/0), as in Debezium 2.7."""
    pg_server.execute("CREATE TYPE mood AS ENUM ('sad', 'ok'); CREATE DOMAIN price AS numeric(10,2);"
                      "CREATE TABLE p (id serial PRIMARY KEY, n numeric, t text, ts timestamptz(3), m mood, pr price,"
                      " a int[], f real); INSERT INTO p (n) VALUES (1)", dbname=pg_db)
    config = {"column.propagate.source.type": ".*", "poll.interval.ms": 20}
    records: list = []
    engine = Engine({"connector.class": "postgres", "database.hostname": pg_server.host, "database.port": pg_server.port,
                     "database.user": pg_server.user, "database.dbname": pg_db, "topic.prefix": "cols", **config},
                    offset_store=MemoryOffsetStore())
    thread = threading.Thread(target=lambda: engine.run(records.extend), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not [r for r in records if r.value and r.value["op"] == "r"] and time.monotonic() < deadline:
            time.sleep(0.05)
        pg_server.execute("INSERT INTO p (n) VALUES (2)", dbname=pg_db)
        while not [r for r in records if r.value and r.value["op"] == "c"] and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        engine.stop()
        thread.join(30)

    def params(op: str) -> dict:
        record = next(r for r in records if r.value and r.value["op"] == op)
        assert record.key_schema.field("id").schema.parameters in (None, {})
        return {f.name: {k.rsplit(".", 1)[1]: v for k, v in (f.schema.parameters or {}).items()
                         if k.startswith("__debezium")}
                for f in record.value_schema.field("after").schema.fields}

    snapshot, streamed = params("r"), params("c")
    assert snapshot["id"] == {"type": "SERIAL", "length": "10", "scale": "0", "name": "id"}
    assert streamed["id"] == {"type": "INT4", "length": "10", "scale": "0", "name": "id"}
    assert snapshot["n"] == {"type": "NUMERIC", "length": "0", "name": "n"}
    assert streamed["n"] == {"type": "NUMERIC", "length": "131089", "scale": "0", "name": "n"}
    for side in (snapshot, streamed):
        assert side["t"] == {"type": "TEXT", "length": "2147483647", "scale": "0", "name": "t"}
        assert side["ts"] == {"type": "TIMESTAMPTZ", "length": "32", "scale": "3", "name": "ts"}
        assert side["m"] == {"type": "MOOD", "length": "2147483647", "scale": "0", "name": "m"}
        assert side["pr"] == {"type": "PRICE", "length": "10", "scale": "2", "name": "pr"}
        assert side["a"] == {"type": "_INT4", "length": "10", "scale": "0", "name": "a"}
        assert side["f"] == {"type": "FLOAT4", "length": "8", "scale": "8", "name": "f"}


def test_masked_column_masks_null_too(pg_server, pg_db):
    # Debezium's MaskingValueConverter ignores its input: a NULL in a masked column is the mask too
    # (seen with Debezium 3.0.7 beside cdc in the conformance suite's `masks` group).
    pg_server.execute("CREATE TABLE people (id int PRIMARY KEY, secret text);"
                      "INSERT INTO people VALUES (1, NULL), (2, 'p@ss')", dbname=pg_db)
    records = _capture(pg_server, pg_db, {"column.mask.with.5.chars": "public.people.secret"}, 2)
    assert [r.value["after"]["secret"] for r in records] == ["*****", "*****"]
