"""JsonConverter's replace.null.with.default: nulls written as their schema's default (or not)."""

from __future__ import annotations

import orjson
import pytest

from cdc_core.errors import ConfigError
from cdc_core.events import ChangeRecord
from cdc_core.schema import INT32, OPTIONAL_STRING, STRING, Schema, primitive, struct
from cdc_core.serializers.defaults import fill, payload_filler
from cdc_core.serializers.json import JsonSerializer
from cdc_core.source import COMMON_SOURCE_FIELDS

ROW = struct("t.Value", [
    ("id", INT32),
    ("label", primitive("string", True, default="none")),
    ("n", primitive("int32", True, default=7)),
    ("plain", OPTIONAL_STRING),
    ("tags", Schema("array", True, items=primitive("string", True, default="?"))),
    ("attrs", Schema("map", True, keys=STRING, values=primitive("int32", True, default=0))),
], optional=True)
SOURCE = struct("t.Source", list(COMMON_SOURCE_FIELDS))
ENVELOPE = struct("t.Envelope", [("before", ROW), ("after", ROW), ("source", SOURCE), ("op", STRING)])
KEY = struct("t.Key", [("id", primitive("int32", default=0))])


def _source(snapshot: str) -> dict:
    return {"version": "v", "connector": "c", "name": "n", "ts_ms": 1, "snapshot": snapshot, "db": "d",
            "sequence": None, "ts_us": 1, "ts_ns": 1}


def _value(after: dict | None, snapshot: str = "false") -> dict:
    return {"before": None, "after": after, "source": _source(snapshot), "op": "c"}


def test_nulls_with_a_default_become_the_default_at_every_level() -> None:
    after = {"id": 1, "label": None, "n": None, "plain": None, "tags": [None, "a"], "attrs": {"k": None, "j": 2}}
    value = _value(after)
    out = fill(ENVELOPE, value)
    assert out["after"] == {"id": 1, "label": "none", "n": 7, "plain": None, "tags": ["?", "a"], "attrs": {"k": 0, "j": 2}}
    assert list(out["after"]) == list(after)  # field order kept
    assert value["after"]["label"] is None and value["after"]["tags"] == [None, "a"]  # the record is not changed


def test_nothing_to_replace_returns_the_payload_itself() -> None:
    value = _value({"id": 1, "label": "x", "n": 0, "plain": None, "tags": None, "attrs": None})
    assert fill(ENVELOPE, value) is value
    assert fill(ENVELOPE, _value(None)) == _value(None)


def test_schemas_without_defaults_get_no_function() -> None:
    assert payload_filler(struct("k", [("id", INT32), ("s", OPTIONAL_STRING)]), True) is None
    assert payload_filler(None, True) is None
    assert payload_filler(ROW, False) is None  # no SnapshotRecord in a row
    assert payload_filler(ROW, True) is payload_filler(ROW, True)  # built once per schema


def test_turned_off_nulls_stay_and_a_false_snapshot_is_unset() -> None:
    """Debezium leaves source.snapshot unset for SnapshotRecord.FALSE: JsonConverter without defaults writes null."""
    after = {"id": 1, "label": None, "n": None, "plain": None, "tags": None, "attrs": None}
    out = fill(ENVELOPE, _value(after), replace=False)
    assert out["after"] == after and out["source"]["snapshot"] is None
    assert list(out["source"]) == list(_source("false"))
    read = _value(after, snapshot="last")
    assert fill(ENVELOPE, read, replace=False) is read


def _record(key_id: int | None, after: dict) -> ChangeRecord:
    return ChangeRecord("t", {"id": key_id}, _value(after), KEY, ENVELOPE)


AFTER = {"id": 1, "label": None, "n": 3, "plain": None, "tags": None, "attrs": None}


@pytest.mark.parametrize("schemas", [True, False])
def test_serializer_replaces_by_default_with_schemas_on_or_off(schemas: bool) -> None:
    [out] = JsonSerializer(schemas, schemas).serialize([_record(None, AFTER)])
    key, value = orjson.loads(out.key), orjson.loads(out.value)
    if schemas:
        key, value = key["payload"], value["payload"]
    assert key == {"id": 0}
    assert value["after"]["label"] == "none" and value["source"]["snapshot"] == "false"


@pytest.mark.parametrize("schemas", [True, False])
def test_serializer_with_replace_off_per_side(schemas: bool) -> None:
    serializer = JsonSerializer(schemas, schemas, key_replace_null_with_default=True,
                                value_replace_null_with_default=False)
    [out] = serializer.serialize([_record(None, AFTER)])
    key, value = orjson.loads(out.key), orjson.loads(out.value)
    if schemas:
        key, value = key["payload"], value["payload"]
    assert key == {"id": 0}
    assert value["after"]["label"] is None and value["source"]["snapshot"] is None


def test_from_config_reads_the_converter_properties() -> None:
    serializer = JsonSerializer.from_config({"value.converter.replace.null.with.default": "false",
                                             "key.converter.schemas.enable": "false"})
    [out] = serializer.serialize([_record(5, AFTER)])
    assert out.key == b'{"id":5}'
    assert orjson.loads(out.value)["payload"]["after"]["label"] is None
    with pytest.raises(ConfigError, match="key.converter.replace.null.with.default: 'perhaps' is not a boolean"):
        JsonSerializer.from_config({"key.converter.replace.null.with.default": "perhaps"})
