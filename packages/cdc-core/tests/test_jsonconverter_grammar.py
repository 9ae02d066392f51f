"""The JsonConverter grammar check, and that the test suite runs every serialized record through it."""

from __future__ import annotations

import os

import orjson
import pytest

from cdc_core.events import ChangeRecord
from cdc_core.schema import INT32, Schema, primitive, struct
from cdc_core.serializers.checking import install
from cdc_core.serializers.grammar import payload_problems, record_problems, schema_problems
from cdc_core.serializers.json import JsonSerializer


def test_the_suite_checks_every_serialized_record() -> None:
    """The root conftest turns the check on; a record JsonConverter could not read fails the test."""
    assert os.environ.get("CDC_CHECK_JSON")
    assert getattr(JsonSerializer.serialize, "checked", False)
    if os.environ["CDC_CHECK_JSON"] not in ("1", "true", "yes"):
        pytest.skip("CDC_CHECK_JSON names a file: problems are logged there, not raised")
    bad = ChangeRecord("t", None, {"x": "not an int"}, None, struct("v", [("x", INT32)]))
    with pytest.raises(AssertionError, match=r"t value.payload.x: 'not an int' is not an int32"):
        JsonSerializer().serialize([bad])


def test_known_problems_are_left_out(tmp_path, monkeypatch) -> None:
    known = tmp_path / "known.txt"
    known.write_text("# reason\n\\S+ value\\.payload\\.x: .* is not an int32$\n")
    monkeypatch.setenv("CDC_CHECK_JSON_KNOWN", str(known))
    monkeypatch.setenv("CDC_CHECK_JSON", "1")

    class Serializer(JsonSerializer):
        serialize = JsonSerializer.serialize.__wrapped__  # the unchecked original

    install(Serializer)
    ok = ChangeRecord("t", None, {"x": "not an int"}, None, struct("v", [("x", INT32)]))
    Serializer().serialize([ok])
    with pytest.raises(AssertionError, match="is not a string"):
        Serializer().serialize([ChangeRecord("t", None, {"y": 1}, None, struct("v", [("y", Schema("string"))]))])


@pytest.mark.parametrize("schema", [
    Schema("float32"), Schema("float64", True, default=1.5),
    struct("s", [("a", primitive("string", True, name="n", version=1, doc="d", parameters={"p": "1"}, default="x")),
                 ("m", Schema("map", True, keys=Schema("string"), values=Schema("int64", True))),
                 ("l", Schema("array", items=Schema("bytes", True)))], optional=True, version=2),
], ids=["float", "double-default", "struct"])
def test_what_cdc_renders_is_valid(schema: Schema) -> None:
    assert schema_problems(schema.to_json()) == []


@pytest.mark.parametrize(("schema", "problem"), [
    ({"type": "float32", "optional": False}, "'float32' is not a JsonConverter schema type"),
    ({"optional": False, "type": "int32"}, "not in JsonConverter's order"),
    ({"type": "int32", "optional": "false"}, "always writes a boolean"),
    ({"type": "int32"}, "always writes a boolean"),
    ({"type": "string", "optional": True, "parameters": {"length": 5}}, "must map strings to strings"),
    ({"type": "int32", "optional": True, "default": "0"}, "default: '0' is not an int32"),
    ({"type": "int32", "optional": True, "default": None}, "writes no default rather than a null one"),
    ({"type": "struct", "fields": [{"type": "int32", "optional": False}], "optional": False}, "needs its name in 'field'"),
    ({"type": "struct", "fields": [{"type": "int32", "field": "a", "optional": False}], "optional": False},
     "not in JsonConverter's order"),
    ({"type": "array", "optional": False}, "needs 'items'"),
    ({"type": "int32", "optional": False, "version": "1"}, "is not an integer"),
    ({"type": "int32", "optional": False, "color": "red"}, "unknown keys"),
])
def test_schema_grammar_problems(schema: dict, problem: str) -> None:
    problems = schema_problems(schema)
    assert any(problem in p for p in problems), problems


@pytest.mark.parametrize(("schema", "value", "ok"), [
    ({"type": "int64", "optional": False}, 1, True),
    ({"type": "int64", "optional": False}, 1.0, False),
    ({"type": "int8", "optional": False}, 128, False),
    ({"type": "double", "optional": False}, 1.0, True),
    ({"type": "double", "optional": False}, 1, False),  # JsonConverter writes 1.0
    ({"type": "double", "optional": False}, "NaN", True),
    ({"type": "boolean", "optional": False}, 1, False),
    ({"type": "bytes", "optional": False}, "AQI=", True),
    ({"type": "bytes", "optional": False}, "not base64!", False),
    ({"type": "string", "optional": False}, None, False),
    ({"type": "string", "optional": False, "default": "x"}, None, True),
    ({"type": "map", "keys": {"type": "string", "optional": False}, "values": {"type": "string", "optional": False},
      "optional": True}, {"a": None}, False),
    ({"type": "map", "keys": {"type": "int32", "optional": False}, "values": {"type": "string", "optional": True},
      "optional": True}, [[1, "a"]], True),
    ({"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "a"},
                                   {"type": "int32", "optional": True, "field": "b"}], "optional": False},
     {"b": None, "a": 1}, False),
])
def test_payload_grammar(schema: dict, value: object, ok: bool) -> None:
    assert (payload_problems(schema, value) == []) is ok


def test_record_envelope() -> None:
    schema = INT32.json_bytes()
    assert record_problems(b'{"schema":' + schema + b',"payload":1}', True) == []
    assert record_problems(b'{"payload":1,"schema":' + schema + b'}', True) != []
    assert record_problems(orjson.dumps({"schema": None, "payload": {"a": 1}}), True) == []
    assert record_problems(b"1", False) == [] and record_problems(None, True) == []
