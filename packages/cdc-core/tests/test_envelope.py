"""EventBuilder: RawChanges to Debezium change records (topics, schemas, envelope, tombstones, key changes)."""

from __future__ import annotations

import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest

from memory_connector import CUSTOMERS, SOURCE_SCHEMA, insert, offset, source

from cdc_core.config import Config
from cdc_core.config.common import UNAVAILABLE_PLACEHOLDER as PLACEHOLDER_FIELD
from cdc_core.envelope import EventBuilder

UNAVAILABLE_PLACEHOLDER = PLACEHOLDER_FIELD.default
from cdc_core.events import UNAVAILABLE, ChangeRecord, Checkpoint, RawChange
from cdc_core.relational import Column, Table, TableId
from cdc_core.schema import INT32, OPTIONAL_STRING, STRING, primitive
from cdc_core.semantic import variable_scale_decimal_schema
from cdc_core.serializers.json import JsonSerializer

DATA = Path(__file__).parent / "data"
PARTITION = {"server": "dbserver1"}


def builder(**props: Any) -> EventBuilder:
    return EventBuilder(Config({"topic.prefix": "dbserver1", **props}), SOURCE_SCHEMA, PARTITION)


def update(pos: int, before: tuple | None, after: tuple) -> RawChange:
    return RawChange(CUSTOMERS, "u", before, after, source(pos), offset(pos))


def delete(pos: int, before: tuple) -> RawChange:
    return RawChange(CUSTOMERS, "d", before, None, source(pos), offset(pos))


class _AnyHeaders:
    """Matches any headers (what a tombstone of a key change carries is tested on its own)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, dict)


ANY_HEADERS = _AnyHeaders()


def summary(records: list) -> list[tuple]:
    """(kind, key, op, offset, headers) per record; kind is 'event', 'tombstone' or 'checkpoint'."""
    out = []
    for r in records:
        if isinstance(r, Checkpoint):
            out.append(("checkpoint", None, None, r.offset, None))
        elif r.value is None:
            out.append(("tombstone", r.key, None, r.offset, r.headers))
        else:
            out.append(("event", r.key, r.value["op"], r.offset, r.headers))
    return out


def test_topic_and_schemas_of_a_create() -> None:
    [record] = builder().build([insert(1, name="Anne", email="a@x")])
    assert record.topic == "dbserver1.public.customers"
    assert record.partition == PARTITION
    assert record.key == {"id": 1}
    assert record.key_schema.json_bytes() == (
        b'{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],'
        b'"optional":false,"name":"dbserver1.public.customers.Key"}'
    )
    expected = orjson.loads((DATA / "customers_envelope_schema.json").read_bytes())
    assert record.value_schema.json_bytes() == orjson.dumps(expected)
    assert record.value_schema.field("after").schema.name == "dbserver1.public.customers.Value"


def test_envelope_payload_of_a_create() -> None:
    before_ns = time.time_ns()
    [record] = builder().build([insert(7, name="Anne", email="a@x")])
    value = record.value
    # Debezium's field order (TableSchemaBuilder adds transaction before Envelope.Builder appends
    # op and the timestamps); JsonConverter writes the payload in schema order.
    assert list(value) == ["before", "after", "source", "transaction", "op", "ts_ms", "ts_us", "ts_ns"]
    assert list(value) == list(record.value_schema.field_names)
    assert record.value_schema.version == 2  # Debezium 2.7.4's Envelope.SCHEMA_VERSION
    assert value["before"] is None
    assert value["after"] == {"id": 7, "name": "Anne", "email": "a@x"}
    assert value["source"] == {"name": "test", "pos": 7}
    assert value["op"] == "c"
    assert value["transaction"] is None
    assert before_ns <= value["ts_ns"] <= time.time_ns()
    assert value["ts_us"] == value["ts_ns"] // 1000 and value["ts_ms"] == value["ts_ns"] // 1_000_000
    assert record.offset == {"pos": 7}
    assert record.headers == {}


def test_serialized_create_is_jsonconverter_output() -> None:
    [record] = builder().build([insert(1, name=None, email="a@x")])
    [out] = JsonSerializer(False, False).serialize([record])
    assert out.key == b'{"id":1}'
    doc = orjson.loads(out.value)
    assert out.value == (
        b'{"before":null,"after":{"id":1,"name":null,"email":"a@x"},"source":{"name":"test","pos":1},'
        b'"transaction":null,"op":"c","ts_ms":%d,"ts_us":%d,"ts_ns":%d}' % (doc["ts_ms"], doc["ts_us"], doc["ts_ns"])
    )


def test_every_kind_of_event_writes_its_payload_in_schema_order() -> None:
    """Runs of inserts (built in one go), updates, deletes and key changes: the envelope's field order."""
    changes = [insert(i, name="n", email="e") for i in range(10, 30)]
    changes += [update(40, ("10", "n", "e"), ("10", "m", "e")), update(41, ("11", "n", "e"), ("99", "n", "e")),
                delete(42, ("12", "n", "e"))]
    records = [r for r in builder().build(changes) if isinstance(r, ChangeRecord) and r.value is not None]
    assert len(records) == 20 + 1 + 2 + 1
    for r in records:
        assert list(r.value) == list(r.value_schema.field_names), r.value["op"]


def test_topic_delimiter_and_sanitizing() -> None:
    table = Table(TableId(None, "public", "order lines"), [Column("id", "int4", INT32, int, optional=False)], ["id"])
    [record] = builder(**{"topic.delimiter": "_"}).build(
        [RawChange(table, "r", None, ("1",), source(1), offset(1))]
    )
    assert record.topic == "dbserver1_public_order_lines"
    # Schema names start with the topic name (2.7.4's recordSchemaPrefix is dataChangeTopic).
    assert record.key_schema.name == "dbserver1_public_order_lines.Key"
    assert record.value_schema.name == "dbserver1_public_order_lines.Envelope"
    assert record.value["op"] == "r"


def test_table_without_schema_uses_its_catalog() -> None:
    table = Table(TableId("inventory", None, "orders"), [Column("id", "int", INT32, int, optional=False)], ["id"])
    [record] = builder().build([RawChange(table, "c", None, ("1",), source(1), offset(1))])
    assert record.topic == "dbserver1.inventory.orders"
    assert record.value_schema.name == "dbserver1.inventory.orders.Envelope"


def test_keyless_table_has_null_key_and_key_schema() -> None:
    table = Table(TableId(None, "public", "log"), [Column("msg", "text", OPTIONAL_STRING, str)], [])
    [record] = builder().build([RawChange(table, "c", None, ("hi",), source(1), offset(1))])
    assert record.key is None and record.key_schema is None
    [out] = JsonSerializer().serialize([record])
    assert out.key is None


def test_update_has_before_and_after() -> None:
    [record] = builder().build([update(2, ("1", "Anne", "a@x"), ("1", "Anna", "a@x"))])
    assert record.value["op"] == "u"
    assert record.value["before"] == {"id": 1, "name": "Anne", "email": "a@x"}
    assert record.value["after"] == {"id": 1, "name": "Anna", "email": "a@x"}
    assert (record.key, record.offset) == ({"id": 1}, {"pos": 2})


def test_delete_is_followed_by_a_tombstone_carrying_the_offset() -> None:
    records = builder().build([delete(3, ("1", "Anne", "a@x"))])
    assert summary(records) == [
        ("event", {"id": 1}, "d", None, {}),
        ("tombstone", {"id": 1}, None, {"pos": 3}, {}),
    ]
    event, tombstone = records
    assert event.value["before"] == {"id": 1, "name": "Anne", "email": "a@x"}
    assert event.value["after"] is None
    assert tombstone.value_schema is None
    assert tombstone.key_schema is event.key_schema
    [_, out] = JsonSerializer().serialize(records)
    assert out.value is None and out.key is not None


@pytest.mark.parametrize("value", ["false", False])
def test_no_tombstone_when_tombstones_on_delete_is_false(value: object) -> None:
    records = builder(**{"tombstones.on.delete": value}).build([delete(3, ("1", "Anne", "a@x"))])
    assert summary(records) == [("event", {"id": 1}, "d", {"pos": 3}, {})]


@pytest.mark.parametrize(
    ("tombstones", "expected"),
    [
        (
            True,
            [
                ("event", {"id": 1}, "d", None, {"__debezium.newkey": {"id": 2}}),
                ("tombstone", {"id": 1}, None, None, ANY_HEADERS),
                ("event", {"id": 2}, "c", {"pos": 4}, {"__debezium.oldkey": {"id": 1}}),
            ],
        ),
        (
            False,
            [
                ("event", {"id": 1}, "d", None, {"__debezium.newkey": {"id": 2}}),
                ("event", {"id": 2}, "c", {"pos": 4}, {"__debezium.oldkey": {"id": 1}}),
            ],
        ),
    ],
)
def test_primary_key_change_is_delete_tombstone_create(tombstones: bool, expected: list) -> None:
    records = builder(**{"tombstones.on.delete": tombstones}).build([update(4, ("1", "Anne", "a@x"), ("2", "Anne", "a@x"))])
    assert summary(records) == expected
    deleted, created = records[0], records[-1]
    assert (deleted.value["before"], deleted.value["after"]) == ({"id": 1, "name": "Anne", "email": "a@x"}, None)
    assert (created.value["before"], created.value["after"]) == (None, {"id": 2, "name": "Anne", "email": "a@x"})
    assert deleted.value["source"] == created.value["source"] == {"name": "test", "pos": 4}


def test_tombstone_of_a_primary_key_change_carries_the_delete_headers() -> None:
    records = builder().build([update(4, ("1", "Anne", "a@x"), ("2", "Anne", "a@x"))])
    assert records[1].value is None
    assert records[1].headers == {"__debezium.newkey": {"id": 2}}


def test_only_the_last_record_of_each_change_carries_the_offset_and_checkpoints_pass_through() -> None:
    records = builder().build(
        [
            insert(1),
            Checkpoint({"pos": 1, "snapshot": "last"}),
            delete(2, ("1", "n", "e")),
            update(3, ("5", "n", "e"), ("6", "n", "e")),
            insert(4),
        ]
    )
    assert [(kind, off) for kind, _, _, off, _ in summary(records)] == [
        ("event", {"pos": 1}),
        ("checkpoint", {"pos": 1, "snapshot": "last"}),
        ("event", None),
        ("tombstone", {"pos": 2}),
        ("event", None),
        ("tombstone", None),
        ("event", {"pos": 3}),
        ("event", {"pos": 4}),
    ]


def test_unavailable_values_in_updates_become_the_placeholder() -> None:
    blob = Column("data", "bytea", primitive("bytes", True), lambda v: v)
    table = Table(TableId(None, "public", "docs"), [*CUSTOMERS.columns, blob], ["id"])
    [record] = builder().build(
        [RawChange(table, "u", None, ("1", UNAVAILABLE, "a@x", UNAVAILABLE), source(1), offset(1))]
    )
    assert record.value["after"] == {
        "id": 1,
        "name": UNAVAILABLE_PLACEHOLDER,
        "email": "a@x",
        "data": "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ==",  # base64 of the placeholder
    }
    assert UNAVAILABLE_PLACEHOLDER == "__debezium_unavailable_value"


DECIMAL = primitive("bytes", name="org.apache.kafka.connect.data.Decimal", version=1, parameters={"scale": "0"})
WIDE = Table(
    TableId(None, "public", "wide"),
    [
        Column("id", "int4", INT32, int, optional=False),
        Column("qty", "int4", INT32, int, optional=False),
        Column("big", "int8", primitive("int64"), int, optional=False),
        Column("label", "text", STRING, str, optional=False),
        Column("status", "text", primitive("string", default="new"), str, optional=False),
        Column("flag", "bool", primitive("boolean"), lambda v: v == "t", optional=False),
        Column("ratio", "float8", primitive("float64"), float, optional=False),
        Column("price", "numeric", DECIMAL, str, optional=False),
        Column("note", "text", OPTIONAL_STRING, str),
    ],
    ["id"],
)


def test_null_in_non_optional_columns_becomes_the_default_or_zero() -> None:
    # A REPLICA IDENTITY DEFAULT delete carries only the key; Debezium fills the other
    # non-optional columns with their default, else the type's zero value.
    records = builder().build(
        [RawChange(WIDE, "d", ("9", None, None, None, None, None, None, None, None), None, source(1), offset(1))]
    )
    assert records[0].value["before"] == {
        "id": 9, "qty": 0, "big": 0, "label": "", "status": "new", "flag": False, "ratio": 0.0,
        "price": "AA==", "note": None,
    }


def test_nulls_in_a_run_of_inserts_convert_as_in_a_single_insert() -> None:
    # Ten inserts of one table are built in one go, column by column; every other row has NULL text columns.
    rows = [(str(i), "2", "3", *(("x", "s") if i % 2 else (None, None)), "t", "1.5", "7", "n" if i % 2 else None)
            for i in range(10)]
    run = builder().build([RawChange(WIDE, "c", None, r, source(i), offset(i)) for i, r in enumerate(rows)])
    alone = [builder().build([RawChange(WIDE, "c", None, r, source(i), offset(i))])[0] for i, r in enumerate(rows)]
    assert [r.value["after"] for r in run] == [r.value["after"] for r in alone]
    assert run[0].value["after"] == {"id": 0, "qty": 2, "big": 3, "label": "", "status": "new", "flag": True,
                                     "ratio": 1.5, "price": "7", "note": None}


@pytest.mark.parametrize(
    ("props", "value_fields"),
    [
        ({"column.exclude.list": "public.customers.email"}, ["id", "name"]),
        ({"column.exclude.list": "public\\.customers\\.(name|email)"}, ["id"]),
        ({"column.include.list": "public.customers.id,public.customers.email"}, ["id", "email"]),
        ({"column.exclude.list": "public.cust.email"}, ["id", "name", "email"]),  # anchored: no match
        ({"column.exclude.list": "other.customers.email"}, ["id", "name", "email"]),
    ],
)
def test_column_lists_shape_the_value(props: dict, value_fields: list[str]) -> None:
    [record] = builder(**props).build([insert(1, name="Anne", email="a@x")])
    assert list(record.value["after"]) == value_fields
    assert list(record.value_schema.field("after").schema.field_names) == value_fields
    assert record.key == {"id": 1}
    assert record.key_schema.field_names == ("id",)


@pytest.mark.parametrize(
    "props",
    [{"column.exclude.list": "public.customers.id"}, {"column.include.list": "public.customers.name"}],
)
def test_excluded_key_column_stays_in_the_key(props: dict) -> None:
    [record] = builder(**props).build([insert(1, name="Anne", email="a@x")])
    assert "id" not in record.value["after"]
    assert record.key == {"id": 1}
    assert record.key_schema is not None and record.key_schema.field_names == ("id",)


def test_a_new_table_version_gets_new_schemas() -> None:
    b = builder()
    [first] = b.build([insert(1)])
    altered = Table(CUSTOMERS.id, [*CUSTOMERS.columns, Column("age", "int4", primitive("int32", True), int)], ["id"])
    [second] = b.build([RawChange(altered, "c", None, ("2", "n", "e", "30"), source(2), offset(2))])
    [third] = b.build([insert(3)])
    assert second.value["after"] == {"id": 2, "name": "n", "email": "e", "age": 30}
    assert second.value_schema is not first.value_schema
    assert third.value_schema is first.value_schema  # the same Table object reuses its compiled schemas


def test_records_are_change_records() -> None:
    assert all(isinstance(r, ChangeRecord) for r in builder().build([insert(1), delete(2, ("1", "n", "e"))]))


# (raw key values before, after) -> is it a key change?  Equal raw values that would convert to
# different key fields (-0.0 and 0.0, Decimal 1.0 and 1.00, True and 1) still count as a change.
OLD_KEY_CASES = [
    ((1, "a"), (1, "a"), False),
    ((1, "a"), (2, "a"), True),
    ((1, "a"), (1, "b"), True),
    ((None, "a"), (2, "a"), False),  # the old row does not carry the key: old key unknown
    ((-0.0, "a"), (0.0, "a"), True),
    ((Decimal("1.0"), "a"), (Decimal("1.00"), "a"), True),
    ((True, "a"), (1, "a"), True),
    ((b"\x01", "a"), (b"\x01", "a"), False),
]


@pytest.mark.parametrize("before, after, changed", OLD_KEY_CASES)
def test_update_key_change_is_decided_on_converted_keys(before: tuple, after: tuple, changed: bool) -> None:
    from cdc_core.schema import OPTIONAL_STRING
    table = Table(TableId(None, "public", "pairs"),
                  [Column("k1", "any", OPTIONAL_STRING, repr, position=1),
                   Column("k2", "text", STRING, str, position=2)], ["k1", "k2"])
    records = builder().build([RawChange(table, "u", before, after, source(1), offset(1))])
    assert [r.value["op"] for r in records if r.value is not None] == (["d", "c"] if changed else ["u"])


def _fails_on_bad(x: str) -> str:
    if x == "bad":
        raise ValueError("bad value")
    return x.upper()


#: Columns whose converters an update's two images may share (``price``, ``word``, ``ratio``) or not
#: (``id``: a plain ``int``; ``scaled``: a struct, each row must get its own dict).
PAIR_TABLE = Table(TableId(None, "public", "pairs"), [
    Column("id", "int4", INT32, int, position=1),
    Column("price", "numeric", OPTIONAL_STRING, lambda x: f"<{x}>", position=2),
    Column("word", "text", OPTIONAL_STRING, _fails_on_bad, position=3),
    Column("ratio", "float8", primitive("float64", optional=True), lambda x: float(x), position=4),
    Column("scaled", "numeric", variable_scale_decimal_schema(optional=True),
           lambda x: {"scale": 0, "value": x}, position=5),
], ["id"])

# (before, after) raw images of an update of PAIR_TABLE.
UPDATE_PAIRS = [
    (("1", "9.50", "a", -0.0, "AQ=="), ("1", "9.50", "a", 0.0, "AQ==")),
    (("1", "9.50", "a", 1.5, "AQ=="), ("1", "9.75", "b", 1.5, "Ag==")),
    (("1", None, None, None, None), ("1", "9.50", "a", 2.0, "AQ==")),
    (("1", "9.50", UNAVAILABLE, 2.0, None), ("1", "9.50", UNAVAILABLE, 2.0, None)),
    (("1", "9.50", "a", 2.0, None), ("1", "9.50", UNAVAILABLE, 2.0, None)),
    (("1", "9.50", "bad", 2.0, None), ("1", "9.50", "bad", 2.0, None)),
    (("1", "9.50", "bad", 2.0, None), ("1", "9.50", "a", 2.0, None)),
]


@pytest.mark.parametrize("before, after", UPDATE_PAIRS)
def test_update_images_convert_as_each_row_alone(before: tuple, after: tuple) -> None:
    b = builder(**{"event.converting.failure.handling.mode": "warn"})
    [record] = b.build([RawChange(PAIR_TABLE, "u", before, after, source(1), offset(1))])
    te = b.table_events(PAIR_TABLE)
    # Compared as JSON: -0.0 == 0.0 in Python, not in the event.
    assert orjson.dumps((record.value["before"], record.value["after"])) == orjson.dumps(
        (te.row_toast(before), te.row_toast(after)))
    assert record.value["before"]["scaled"] is not record.value["after"]["scaled"] or before[4] is None
