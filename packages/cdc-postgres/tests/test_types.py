"""PostgreSQL type mapping, driven by tests/data/type_mapping.yaml (schema and JSON value per type and mode)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from cdc_postgres.types import (
    BUILTIN_TYPES,
    TypeModes,
    UnsupportedTypeError,
    ValueConversionError,
    column_for,
    convert_value,
)

DATA = Path(__file__).parent / "data" / "type_mapping.yaml"
OID_BY_NAME = {name: oid for oid, name in BUILTIN_TYPES.items()}


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


def _column(group: dict[str, Any], modes: dict[str, Any], optional: bool):
    oid = group["oid"] if "oid" in group else OID_BY_NAME[group["type"]]
    return column_for(
        "col",
        oid,
        _typmod(group),
        optional,
        TypeModes(**modes),
        position=3,
        type_name=group.get("type_name"),
    )


@pytest.mark.parametrize(("group", "modes"), _cases())
def test_schema(group: dict[str, Any], modes: dict[str, Any]) -> None:
    for optional in (True, False):
        column = _column(group, modes, optional)
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


def test_unknown_oid_raises_naming_column_and_type() -> None:
    with pytest.raises(UnsupportedTypeError) as info:
        column_for("location", 600, -1, True, TypeModes(), type_name="point")
    assert info.value.column == "location"
    assert info.value.type_oid == 600
    assert "location" in str(info.value) and "point" in str(info.value) and "600" in str(info.value)


def test_unknown_oid_without_name() -> None:
    with pytest.raises(UnsupportedTypeError, match="OID 99999"):
        column_for("c", 99999, -1, True, TypeModes())


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
