"""The outbox EventRouter chapter's examples end to end: an outbox table on a real PostgreSQL, the routed events."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import orjson
import pytest

from cdc_core.config import Config
from cdc_core.errors import ConfigError, ConnectorError
from cdc_core.events import ChangeRecord
from cdc_core.serializers.json import JsonSerializer
from cdc_core.transforms.outbox import EventRouter
from cdc_postgres.testing import _drop_database as drop_database
from test_transforms_scripting_postgres import capture

#: The outbox table the chapter expects ("Outbox table structure expected by Debezium outbox event router SMT").
OUTBOX_TABLE = """CREATE SCHEMA inventory;
CREATE TABLE inventory.outboxevent (id uuid NOT NULL PRIMARY KEY, aggregatetype varchar(255) NOT NULL,
                                    aggregateid varchar(255) NOT NULL, type varchar(255) NOT NULL, payload jsonb)"""
#: The chapter's payload, as PostgreSQL's jsonb writes it back (the chapter's text already is in that form).
PAYLOAD = ('{"id": 1, "lineItems": [{"id": 1, "item": "Debezium in Action", "status": "ENTERED", "quantity": 2, '
           '"totalPrice": 39.98}, {"id": 2, "item": "Debezium for Dummies", "status": "ENTERED", "quantity": 1, '
           '"totalPrice": 29.99}], "orderDate": "2019-01-31T12:13:01", "customerId": 123}')
EVENT_ID = "406c07f3-26f0-4eea-a50c-109940064b8f"
CHAPTER_ROW = f"INSERT INTO inventory.outboxevent VALUES ('{EVENT_ID}', 'Order', '1', 'OrderCreated', '{PAYLOAD}')"


@pytest.fixture(scope="module")
def outbox_events(pg_server) -> list[ChangeRecord]:
    """The outbox table's events: the chapter's row (snapshot), 2 inserts, an update, a delete, a NULL payload."""
    db = f"outbox_{uuid.uuid4().hex[:8]}"
    pg_server.create_database(db)
    try:
        pg_server.execute(OUTBOX_TABLE, dbname=db)
        pg_server.execute(CHAPTER_ROW, dbname=db)
        changes = [
            "INSERT INTO inventory.outboxevent VALUES ('11111111-1111-1111-1111-111111111111', 'customers', '7', "
            "'CustomerCreated', '{\"name\": \"Ann\"}')",
            "INSERT INTO inventory.outboxevent VALUES ('22222222-2222-2222-2222-222222222222', 'orders', '8', "
            "'OrderShipped', '{\"order\": 8, \"items\": [1, 2]}')",
            "UPDATE inventory.outboxevent SET type = 'Changed' WHERE aggregateid = '7'",
            "DELETE FROM inventory.outboxevent WHERE aggregateid = '8'",
            "INSERT INTO inventory.outboxevent VALUES ('33333333-3333-3333-3333-333333333333', 'Order', '1', "
            "'OrderDeleted', NULL)",
        ]
        # snapshot read, 2 inserts, the update, the delete and its tombstone, the NULL payload insert
        return capture(pg_server, db, changes, 7, tables="inventory.outboxevent")
    finally:
        drop_database(pg_server, db)


def router(**props: Any) -> EventRouter:
    """The EventRouter as ``transforms.outbox.*`` configures it."""
    return EventRouter(Config({"type": "io.debezium.transforms.outbox.EventRouter", **props}))


def routed(r: EventRouter, records: list[ChangeRecord]) -> list[ChangeRecord]:
    """The events the router emits for ``records``."""
    return [out for out in (r.apply(rec) for rec in records) if out is not None]


def written(records: list[ChangeRecord], schemas: bool = False) -> list[tuple[str, bytes | None, bytes | None, dict]]:
    """(topic, key bytes, value bytes, headers) as JsonConverter writes them."""
    return [(s.topic, s.key, s.value, s.headers) for s in JsonSerializer(schemas, schemas).serialize(records)]


def test_the_chapter_example_message(outbox_events):
    # The chapter's message, as it is really produced: the topic keeps the aggregate type's case
    # (the chapter prints outbox.event.order for aggregatetype "Order"), the id header is the row's
    # id (the chapter prints another uuid than its raw message's), and the value is the payload as
    # one JSON string (the chapter prints it inside braces).
    events = routed(router(), outbox_events[:1])
    assert written(events) == [("outbox.event.Order", b'"1"', orjson.dumps(PAYLOAD), {"id": EVENT_ID})]
    assert written(events, schemas=True) == [(
        "outbox.event.Order",
        b'{"schema":{"type":"string","optional":false},"payload":"1"}',
        b'{"schema":{"type":"string","optional":true,"name":"io.debezium.data.Json","version":1},"payload":'
        + orjson.dumps(PAYLOAD) + b"}",
        {"id": EVENT_ID})]


def test_topics_follow_the_aggregate_type_and_updates_deletes_are_dropped(outbox_events, caplog):
    with caplog.at_level(logging.WARNING, logger="cdc.transforms.outbox"):
        events = routed(router(), outbox_events)
    assert [(e.topic, e.key, e.headers["id"]) for e in events] == [
        ("outbox.event.Order", "1", EVENT_ID),
        ("outbox.event.customers", "7", "11111111-1111-1111-1111-111111111111"),
        ("outbox.event.orders", "8", "22222222-2222-2222-2222-222222222222"),
        ("outbox.event.Order", "1", "33333333-3333-3333-3333-333333333333"),
    ]
    # The NULL payload is a null value with the payload's schema (no tombstone unless asked for).
    assert written(events[3:], schemas=True)[0][2] == (
        b'{"schema":{"type":"string","optional":true,"name":"io.debezium.data.Json","version":1},"payload":null}')
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "unexpected update of the outbox table" in warnings[0]
    assert "ignored" in warnings[0]


def test_additional_fields_in_a_header_and_in_the_envelope(outbox_events):
    header = routed(router(**{"table.fields.additional.placement": "type:header:eventType"}), outbox_events[:1])
    assert written(header) == [("outbox.event.Order", b'"1"', orjson.dumps(PAYLOAD),
                                {"id": EVENT_ID, "eventType": "OrderCreated"})]
    envelope = routed(router(**{"table.fields.additional.placement": "type:envelope:eventType"}), outbox_events[:1])
    assert written(envelope) == [("outbox.event.Order", b'"1"',
                                  orjson.dumps({"payload": PAYLOAD, "eventType": "OrderCreated"}), {"id": EVENT_ID})]
    schema = orjson.loads(written(envelope, schemas=True)[0][2])["schema"]
    assert schema == {"type": "struct", "fields": [
        {"type": "string", "optional": True, "name": "io.debezium.data.Json", "version": 1, "field": "payload"},
        {"type": "string", "optional": False, "field": "eventType"}],
        "optional": False, "name": "dbserver1.inventory.outboxevent.Order.Value"}


def test_routing_options(outbox_events):
    r = router(**{"route.by.field": "type", "route.topic.regex": "(?<kind>Order|Customer)(?<what>Created|Deleted)",
                  "route.topic.replacement": "${kind}-events.$2", "table.field.event.key": "id",
                  "table.field.event.id": "aggregateid"})
    events = routed(r, outbox_events)
    assert [(e.topic, e.key, e.headers["id"]) for e in events] == [
        ("Order-events.Created", EVENT_ID, "1"),
        ("Customer-events.Created", "11111111-1111-1111-1111-111111111111", "7"),
        ("OrderShipped", "22222222-2222-2222-2222-222222222222", "8"),  # no full match: the routed value as it is
        ("Order-events.Deleted", "33333333-3333-3333-3333-333333333333", "1"),
    ]


def test_tombstone_on_empty_payload(outbox_events):
    events = routed(router(**{"route.tombstone.on.empty.payload": "true"}), outbox_events)
    assert written(events[3:], schemas=True) == [
        ("outbox.event.Order", b'{"schema":{"type":"string","optional":false},"payload":"1"}', None,
         {"id": "33333333-3333-3333-3333-333333333333"})]


def test_expanded_json_payload(outbox_events):
    events = routed(router(**{"table.expand.json.payload": "true"}), outbox_events)
    assert orjson.loads(written(events[:1])[0][2]) == orjson.loads(PAYLOAD)
    value = orjson.loads(written(events[:1], schemas=True)[0][2])
    line_item = {"type": "struct", "fields": [
        {"type": "int32", "optional": True, "field": "id"}, {"type": "string", "optional": True, "field": "item"},
        {"type": "string", "optional": True, "field": "status"},
        {"type": "int32", "optional": True, "field": "quantity"},
        {"type": "double", "optional": True, "field": "totalPrice"}], "optional": True, "name": "payload.lineItems"}
    assert value["schema"] == {"type": "struct", "fields": [
        {"type": "int32", "optional": True, "field": "id"},
        {"type": "array", "items": line_item, "optional": True, "field": "lineItems"},
        {"type": "string", "optional": True, "field": "orderDate"},
        {"type": "int32", "optional": True, "field": "customerId"}], "optional": True, "name": "payload"}
    assert orjson.loads(written(events[2:3], schemas=True)[0][2])["payload"] == {"order": 8, "items": [1, 2]}
    # Events of one shape share one schema object (serializers cache by identity).
    again = routed(router(**{"table.expand.json.payload": "true"}), outbox_events[:1] * 2)
    assert again[0].value_schema is again[1].value_schema


def test_update_behaviour_fatal_stops(outbox_events, caplog):
    with pytest.raises(ConnectorError, match="unexpected update of the outbox table"):
        routed(router(**{"table.op.invalid.behavior": "fatal"}), outbox_events)
    with caplog.at_level(logging.ERROR, logger="cdc.transforms.outbox"):
        routed(router(**{"debezium.op.invalid.behavior": "error"}), outbox_events)
    assert [r.levelname for r in caplog.records] == ["ERROR"]


def test_a_missing_column_stops_naming_it(outbox_events):
    with pytest.raises(ConnectorError, match="table.field.event.payload names the column 'body', which the table"):
        router(**{"table.field.event.payload": "body"}).apply(outbox_events[0])
    with pytest.raises(ConnectorError, match="names the column 'eventType'"):
        router(**{"table.fields.additional.placement": "eventType:header"}).apply(outbox_events[0])
    lenient = router(**{"table.fields.additional.placement": "eventType:header",
                        "table.fields.additional.error.on.missing": "false"})
    assert lenient.apply(outbox_events[0]).headers == {"id": EVENT_ID}


@pytest.mark.parametrize("props, problem", [
    ({"table.fields.additional.placement": "type"}, "'type' is not 'column:placement' or 'column:placement:alias'"),
    ({"table.fields.additional.placement": "type:body"}, "the placement must be header, envelope or partition"),
    ({"route.topic.regex": "(?<x>"}, "route.topic.regex: '(?<x>' is not a valid regular expression"),
    ({"route.topic.replacement": "outbox.${nosuch}"}, "no group with name {nosuch}"),
    ({"table.op.invalid.behavior": "ignore"}, "table.op.invalid.behavior: 'ignore' is not one of: warn, error, fatal"),
    ({"route.tombstone.on.empty.payload": "maybe"}, "route.tombstone.on.empty.payload: 'maybe' is not a boolean"),
])
def test_bad_options_are_refused_at_start(props, problem):
    with pytest.raises(ConfigError) as e:
        router(**props)
    assert any(problem in p for p in e.value.problems), e.value.problems


def test_array_elements_of_different_shapes_are_merged_as_debezium_merges_them():
    # Seen from Debezium 3.0.7: the merged element struct is not optional; its fields' order follows
    # a Java HashSet there (not stable), the order of first appearance here.
    from cdc_core.transforms.outbox_json import JsonExpander, JsonExpansionError

    expander = JsonExpander()
    schema, value = expander.expand("payload", '{"items": [{"sku": "x"}, {"qty": 3000000000, "sku": "y"}, null]}')
    items = schema.field("items").schema.items
    assert (items.optional, items.name, items.field_names) == (False, "payload.items", ("sku", "qty"))
    assert value == {"items": [{"sku": "x", "qty": None}, {"sku": "y", "qty": 3000000000}, None]}
    same, _ = expander.expand("payload", '{"items": [{"sku": "a"}, {"sku": "b"}]}')
    assert same.field("items").schema.items.optional is True
    with pytest.raises(JsonExpansionError, match="not a homogenous array"):
        expander.expand("payload", '{"a": [1, "x"]}')
    with pytest.raises(JsonExpansionError, match="different number types"):
        expander.expand("payload", '{"a": [1, 3000000000]}')
    nulls = JsonExpander(null_as_optional_bytes=True)
    schema, value = nulls.expand("payload", '{"a": null}')
    assert schema.field("a").schema.type == "bytes" and value == {"a": None}
