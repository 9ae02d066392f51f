"""Connect schemas rendered byte-for-byte as Kafka's JsonConverter writes them, and the JSON serializer."""

from __future__ import annotations

import orjson
import pytest

from cdc_core.events import ChangeRecord
from cdc_core.schema import INT32, INT64, OPTIONAL_STRING, STRING, Schema, primitive, struct
from cdc_core.serializers.json import JsonSerializer
from cdc_core.spi.sink import SinkRecord

DECIMAL = primitive(
    "bytes", name="org.apache.kafka.connect.data.Decimal", version=1,
    parameters={"scale": "2", "connect.decimal.precision": "10"},
)


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (INT32, '{"type":"int32","optional":false}'),
        (OPTIONAL_STRING, '{"type":"string","optional":true}'),
        (
            DECIMAL,
            '{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,'
            '"parameters":{"scale":"2","connect.decimal.precision":"10"}}',
        ),
        (
            primitive("int32", True, name="io.debezium.time.Date", version=1, doc="a day", default=0),
            '{"type":"int32","optional":true,"name":"io.debezium.time.Date","version":1,"doc":"a day","default":0}',
        ),
        (primitive("boolean", True, default=False), '{"type":"boolean","optional":true,"default":false}'),
        (primitive("string", default="n/a"), '{"type":"string","optional":false,"default":"n/a"}'),
        (Schema("array", optional=True, items=STRING), '{"type":"array","items":{"type":"string","optional":false},"optional":true}'),
        (
            Schema("map", keys=STRING, values=OPTIONAL_STRING, name="io.debezium.data.Hstore"),
            '{"type":"map","keys":{"type":"string","optional":false},"values":{"type":"string","optional":true},'
            '"optional":false,"name":"io.debezium.data.Hstore"}',
        ),
        (
            # Debezium's documented key of PostgreSQL's public.customers.
            struct("PostgreSQL_server.public.customers.Key", [("id", INT32)]),
            '{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],"optional":false,'
            '"name":"PostgreSQL_server.public.customers.Key"}',
        ),
        (
            struct(
                "s.Value",
                [("price", DECIMAL.with_optional(True)), ("tags", Schema("array", True, items=STRING))],
                optional=True,
                version=3,
            ),
            '{"type":"struct","fields":['
            '{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,'
            '"parameters":{"scale":"2","connect.decimal.precision":"10"},"field":"price"},'
            '{"type":"array","items":{"type":"string","optional":false},"optional":true,"field":"tags"}'
            '],"optional":true,"name":"s.Value","version":3}',
        ),
        (struct(None, []), '{"type":"struct","fields":[],"optional":false}'),
        # JsonConverter's names for FLOAT32/FLOAT64 (JsonSchema.FLOAT_TYPE_NAME/DOUBLE_TYPE_NAME).
        (primitive("float32", True), '{"type":"float","optional":true}'),
        (primitive("float64", default=1.5), '{"type":"double","optional":false,"default":1.5}'),
        (
            struct("io.debezium.data.geometry.Point", [("x", Schema("float64")), ("y", Schema("float64"))]),
            '{"type":"struct","fields":[{"type":"double","optional":false,"field":"x"},'
            '{"type":"double","optional":false,"field":"y"}],"optional":false,"name":"io.debezium.data.geometry.Point"}',
        ),
        (Schema("array", items=Schema("float32", True)), '{"type":"array","items":{"type":"float","optional":true},"optional":false}'),
    ],
    ids=["int32", "optional-string", "decimal", "all-attributes", "false-default", "string-default",
         "array", "map", "documented-key", "nested-struct", "empty-struct", "float", "double", "double-fields",
         "float-array"],
)
def test_schema_renders_like_jsonconverter(schema: Schema, expected: str) -> None:
    assert schema.json_bytes() == expected.encode()
    assert schema.to_json() == orjson.loads(expected)
    assert schema.json_bytes() is schema.json_bytes()  # rendered once, then reused


def test_with_optional_keeps_everything_else() -> None:
    optional = DECIMAL.with_optional(True)
    assert optional.to_json() == {**DECIMAL.to_json(), "optional": True}
    assert DECIMAL.with_optional(False) is DECIMAL


def test_schema_type_keeps_connects_name() -> None:
    """Code that maps types (cdc-spark, connectors) sees Connect's name; only the JSON says float/double."""
    assert primitive("float64").type == "float64" and primitive("float32").type == "float32"


def test_unknown_schema_type_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown Kafka Connect schema type 'varchar'"):
        Schema("varchar")


KEY = struct("t.public.a.Key", [("id", INT32)])
VALUE = struct("t.public.a.Value", [("id", INT32), ("name", OPTIONAL_STRING)], optional=True)
KEY_JSON = b'{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],"optional":false,"name":"t.public.a.Key"}'
VALUE_JSON = (
    b'{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"},'
    b'{"type":"string","optional":true,"field":"name"}],"optional":true,"name":"t.public.a.Value"}'
)


def _records() -> list[ChangeRecord]:
    return [
        ChangeRecord("t.public.a", {"id": 1}, {"id": 1, "name": "Grüße"}, KEY, VALUE, headers={"h": 1}),
        ChangeRecord("t.public.a", {"id": 1}, None, KEY, None),  # a tombstone
        ChangeRecord("t.public.b", None, {"id": 2, "name": None}, None, VALUE),  # a keyless table
    ]


@pytest.mark.parametrize(
    ("keys", "values", "expected"),
    [
        (
            True, True,
            [
                SinkRecord("t.public.a", b'{"schema":' + KEY_JSON + b',"payload":{"id":1}}',
                           b'{"schema":' + VALUE_JSON + ',"payload":{"id":1,"name":"Grüße"}}'.encode(), {"h": 1}),
                SinkRecord("t.public.a", b'{"schema":' + KEY_JSON + b',"payload":{"id":1}}', None, {}),
                SinkRecord("t.public.b", None, b'{"schema":' + VALUE_JSON + b',"payload":{"id":2,"name":null}}', {}),
            ],
        ),
        (
            False, False,
            [
                SinkRecord("t.public.a", b'{"id":1}', '{"id":1,"name":"Grüße"}'.encode(), {"h": 1}),
                SinkRecord("t.public.a", b'{"id":1}', None, {}),
                SinkRecord("t.public.b", None, b'{"id":2,"name":null}', {}),
            ],
        ),
        (
            False, True,
            [
                SinkRecord("t.public.a", b'{"id":1}',
                           b'{"schema":' + VALUE_JSON + ',"payload":{"id":1,"name":"Grüße"}}'.encode(), {"h": 1}),
                SinkRecord("t.public.a", b'{"id":1}', None, {}),
                SinkRecord("t.public.b", None, b'{"schema":' + VALUE_JSON + b',"payload":{"id":2,"name":null}}', {}),
            ],
        ),
    ],
    ids=["schemas", "no-schemas", "value-schemas-only"],
)
def test_json_serializer(keys: bool, values: bool, expected: list[SinkRecord]) -> None:
    assert JsonSerializer(keys, values).serialize(_records()) == expected


def test_schemaless_value_with_schemas_enabled_has_a_null_schema() -> None:
    record = ChangeRecord("t", None, {"a": 1}, None, None)
    [out] = JsonSerializer().serialize([record])
    assert out.value == b'{"schema":null,"payload":{"a":1}}'
    assert out.key is None


def test_serialized_schema_is_shared_across_records() -> None:
    [a, b] = JsonSerializer().serialize(
        [ChangeRecord("t", {"id": n}, None, KEY, None) for n in (1, 2)]
    )
    assert orjson.loads(a.key)["schema"] == orjson.loads(b.key)["schema"] == orjson.loads(KEY_JSON)
    assert INT64.to_json() == {"type": "int64", "optional": False}
