"""PostgreSQL type mapping, driven by tests/data/type_mapping.yaml (schema and JSON value per type and mode)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from cdc_postgres.types import (
    BUILTIN_ARRAY_TYPES,
    BUILTIN_TYPES,
    TypeInfo,
    TypeModes,
    ValueConversionError,
    column_for,
    convert_value,
    java_hashmap_order,
    parse_array,
)

DATA = Path(__file__).parent / "data" / "type_mapping.yaml"
OID_BY_NAME = {name: oid for oid, name in BUILTIN_TYPES.items()} | {
    name: oid for oid, (name, _) in BUILTIN_ARRAY_TYPES.items()
}


def _typmod(group: dict[str, Any]) -> int:
    if "numeric" in group:
        precision, scale = group["numeric"]
        return ((precision << 16) | (scale & 0x7FF)) + 4
    return group.get("typmod", -1)


def _cases() -> list[Any]:
    """One pytest param per (group, mode set)."""
    params = []
    for index, group in enumerate(yaml.safe_load(DATA.read_text())):
        modes_list = group.get("modes", {})
        if isinstance(modes_list, dict):
            modes_list = [modes_list]
        for modes in modes_list:
            label = group.get("type") or group.get("type_name")
            mode_label = ",".join(f"{v}" for v in modes.values()) or "default"
            params.append(pytest.param(group, modes, id=f"{index:02d}-{label}({_typmod(group)})-{mode_label}"))
    return params


def _type_info(group: dict[str, Any]) -> TypeInfo | None:
    spec = group.get("type_info")
    if spec is None:
        return None
    return TypeInfo(**{k: tuple(v) if k == "labels" else v for k, v in spec.items()})


def _column(group: dict[str, Any], modes: dict[str, Any], optional: bool, default: str | None = None):
    oid = group["oid"] if "oid" in group else OID_BY_NAME[group["type"]]
    return column_for(
        "col",
        oid,
        _typmod(group),
        optional,
        TypeModes(**modes),
        position=3,
        type_name=group.get("type_name"),
        type_info=_type_info(group),
        default_expression=default,
    )


@pytest.mark.parametrize(("group", "modes"), _cases())
def test_schema(group: dict[str, Any], modes: dict[str, Any]) -> None:
    for optional in (True, False):
        column = _column(group, modes, optional)
        if group.get("omitted"):
            # Unknown types: no schema, so the core leaves the column out of events.
            assert column.schema is None and "schema" not in group
            continue
        rendered = dict(column.schema.to_json())
        assert rendered.pop("optional") is optional
        assert rendered == group["schema"]
        assert column.optional is optional
        assert column.position == 3
    if "length" in group:
        assert column.length == group["length"]
    if "scale" in group:
        assert column.scale == group["scale"]


@pytest.mark.parametrize(("group", "modes"), _cases())
def test_values(group: dict[str, Any], modes: dict[str, Any]) -> None:
    column = _column(group, modes, True)
    for text, expected in group.get("values", []):
        got = column.convert(text)
        # Compare what the serializer writes: orjson bytes (so 1 vs True vs 1.0 all differ).
        assert orjson.dumps(got) == orjson.dumps(expected), f"{text!r} → {got!r}, expected {expected!r}"


@pytest.mark.parametrize(("group", "modes"), [c for c in _cases() if c.values[0].get("defaults")])
def test_defaults(group: dict[str, Any], modes: dict[str, Any]) -> None:
    """The schema ``default`` Debezium derives from each ``pg_get_expr`` text (null: no default)."""
    for expression, expected in group["defaults"]:
        for optional in (True, False):
            column = _column(group, modes, optional, default=expression)
            rendered = column.schema.to_json()
            assert orjson.dumps(rendered.get("default")) == orjson.dumps(expected), f"default {expression!r}"
            assert column.default_expression == expression
            # Everything else about the schema is unchanged by a default.
            assert {k: v for k, v in rendered.items() if k not in ("default", "optional")} == group["schema"]


@pytest.mark.parametrize(("group", "modes"), [c for c in _cases() if c.values[0].get("errors")])
def test_errors(group: dict[str, Any], modes: dict[str, Any]) -> None:
    column = _column(group, modes, True)
    for text in group["errors"]:
        with pytest.raises(ValueConversionError) as info:
            convert_value(column, text)
        assert info.value.column == "col"
        assert info.value.value == text
        assert "'col'" in str(info.value)


def test_type_name_defaults_to_pg_type_name() -> None:
    column = column_for("n", 1700, -1, True, TypeModes())
    assert column.type_name == "numeric"
    assert column.type_oid == 1700
    assert column_for("d", 1043, 36, False, TypeModes(), type_name="varchar").length == 32


def test_unknown_types_are_left_out_unless_included() -> None:
    """An unknown type (tsvector here) has no schema by default; include.unknown.datatypes gives its text's bytes."""
    info = TypeInfo(name="tsvector")
    column = column_for("words", 3614, -1, True, TypeModes(), type_name="tsvector", type_info=info)
    assert column.schema is None and column.name == "words" and column.type_oid == 3614
    included = column_for("words", 3614, -1, True, TypeModes(include_unknown_datatypes=True), type_info=info)
    assert included.schema.to_json() == {"type": "bytes", "optional": True}
    assert included.convert("'a' 'b'") == "J2EnICdiJw=="


def test_unknown_oid_without_catalog_information() -> None:
    # The streaming fallback may know nothing but the OID: the column is left out, not an error.
    assert column_for("c", 99999, -1, True, TypeModes()).schema is None


def test_extension_types_by_name_without_catalog_information() -> None:
    column = column_for("tags", 16390, -1, True, TypeModes(), type_name="public.hstore")
    assert column.schema.name == "io.debezium.data.Json"
    column = column_for("geom", 16500, 1107460, True, TypeModes(), type_name="geometry(Point,4326)")
    assert column.schema.name == "io.debezium.data.geometry.Geometry"


def test_parse_array_matches_postgres_output() -> None:
    # array_out of ARRAY['a', NULL, 'NULL', '', 'x y', 'q"', 'b\\', '{', ',']
    text = '{a,NULL,"NULL","","x y","q\\"","b\\\\","{",","}'
    assert parse_array(text) == ["a", None, "NULL", "", "x y", 'q"', "b\\", "{", ","]
    assert parse_array("{}") == []
    assert parse_array("[0:1]={1,2}") == ["1", "2"]
    assert parse_array("{0101:0102}", ":") == ["0101", "0102"]
    for bad in ("{{1,2},{3,4}}", "[0:1][0:1]={{1,2},{3,4}}", "1,2", '{"a"b}', "{a{b}"):
        with pytest.raises(ValueError):
            parse_array(bad)


def test_hashmap_order_is_javas() -> None:
    # Recorded with JDK 17: new HashMap<>() filled in this order, then keySet().
    keys = ["a", "b", "b c", 'q"x', "", "zeta", "alpha", "é", "😀", "key1", "key2", "key10", "key11",
            "k12", "k13", "k14", "k15", "Aa", "BB"]
    java = ["", "zeta", "key1", "Aa", "BB", "a", "key2", "b", "b c", 'q"x', "é", "key11", "k13", "key10",
            "k12", "k15", "k14", "alpha", "😀"]
    assert [k for k, _ in java_hashmap_order([(k, None) for k in keys])] == java


def test_builtin_converter_failure_is_wrapped() -> None:
    column = column_for("qty", 23, -1, False, TypeModes())
    with pytest.raises(ValueConversionError, match="'qty'.*int4"):
        convert_value(column, "12x")


def test_numeric_nan_in_precise_mode_says_how_to_fix() -> None:
    column = column_for("price", 1700, ((10 << 16) | 2) + 4, True, TypeModes())
    with pytest.raises(ValueConversionError, match="decimal.handling.mode=string"):
        column.convert("NaN")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("decimal_handling", "exact"),
        ("binary_handling", "base32"),
        ("time_precision", "nanos"),
        ("interval_handling", "iso"),
        ("money_fraction_digits", -1),
        ("hstore_handling", "hash"),
    ],
)
def test_invalid_modes_are_rejected(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=repr(value) if isinstance(value, str) else "money"):
        TypeModes(**{field: value})


def test_schema_objects_are_shared_per_mapping() -> None:
    # Serializers cache rendered schemas by identity; equal mappings share one object.
    a = column_for("a", 1082, -1, True, TypeModes())
    b = column_for("b", 1082, -1, True, TypeModes())
    assert a.schema is b.schema
