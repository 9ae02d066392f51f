"""Struct payload helpers shared by the transforms: defaults for nulls, field removal, cached by schema identity."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cdc_core.schema import Schema
from cdc_core.transforms.schemas import basics

#: Derived by the identity of the input schema, which each entry keeps alive (so an id is never reused
#: while its entry lives); both start over past ``_LIMIT`` entries (many schema versions over a long run).
_fillers: dict[int, tuple[Schema, Callable[[dict[str, Any]], dict[str, Any]] | None]] = {}
_excluded: dict[tuple[int, frozenset[str]], tuple[Schema, Schema]] = {}
_LIMIT = 4096


def default_filler(schema: Schema) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
    """A function giving a struct payload with each null replaced by its field's default, as Kafka's
    ``Struct.get`` reads it; None when no field of ``schema`` has a default (nothing to do)."""
    found = _fillers.get(id(schema))
    if found is not None and found[0] is schema:
        return found[1]
    defaults = [(f.name, f.schema.default) for f in schema.fields if f.schema.default is not None]

    def fill(row: dict[str, Any]) -> dict[str, Any]:
        """The row with its defaults in place of nulls (the row itself when there is none)."""
        if all(row.get(n) is not None for n, _ in defaults):
            return row
        out = dict(row)
        for n, d in defaults:
            if out.get(n) is None:
                out[n] = d
        return out

    result = fill if defaults else None
    if len(_fillers) >= _LIMIT:
        _fillers.clear()
    _fillers[id(schema)] = (schema, result)
    return result


def exclude_fields(value: dict[str, Any], schema: Schema, names: frozenset[str]) -> tuple[dict[str, Any], Schema]:
    """``ReplaceField`` with ``exclude``: the payload and schema without ``names`` (the schema required, as Kafka's)."""
    key = (id(schema), names)
    found = _excluded.get(key)
    if found is None or found[0] is not schema:
        out = basics(schema, [f for f in schema.fields if f.name not in names])
        if len(_excluded) >= _LIMIT:
            _excluded.clear()
        found = _excluded[key] = (schema, out)
    return {k: v for k, v in value.items() if k not in names}, found[1]


def struct_fields(schema: Schema | None) -> dict[str, Any]:
    """A struct schema's fields by name (empty for anything else)."""
    if schema is None or schema.type != "struct":
        return {}
    return {f.name: f for f in schema.fields}
