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
        "datatype.propagate.source.type": r".+\.numeric",
    }, 1)
    after = records[0].value["after"]
    assert after["secret"] == "*****"
    assert after["note"] == "keep"[:4]
    assert after["name"] == _v2("CzQMA0cB5K", "Anne Kretchmar", 40)
    # v1 digests Java's serialized form of the string, truncated to the column length (10).
    java = b"\xac\xed\x00\x05t" + len(b"ABCDEFGHIJ").to_bytes(2, "big") + b"ABCDEFGHIJ"
    assert after["code"] == hashlib.sha256(b"salty" + java).hexdigest()[:10]
    fields = {f.name: f.schema for f in records[0].value_schema.field("after").schema.fields}
    assert fields["name"].parameters == {"masked": "true",  # MaskStrings.alterFieldSchema, hashing included
                                         "__debezium.source.column.type": "VARCHAR", "__debezium.source.column.length": "40",
                                         "__debezium.source.column.name": "name"}
    assert fields["n"].parameters["__debezium.source.column.type"] == "NUMERIC"
    assert fields["n"].parameters["__debezium.source.column.length"] == "8"
    assert fields["n"].parameters["__debezium.source.column.scale"] == "3"


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
    # NaN cannot be written as a precise decimal: fail stops the connector, warn skips the change.
    if mode == "fail":
        with pytest.raises(ConnectorError, match="event.processing.failure.handling.mode=warn"):
            _capture(pg_server, pg_db, {"event.processing.failure.handling.mode": mode}, 1, timeout=10)
    else:
        records = _capture(pg_server, pg_db, {"event.processing.failure.handling.mode": mode}, 1)
        assert [r.value["after"]["id"] for r in records] == [2]
