"""JSON-ready payloads (what JsonConverter writes) as the values fastavro writes under ``avro_schema``'s schemas.

cdc's payloads are already in JsonConverter's form; only a few kinds differ in Avro: NaN and the
infinities, which JSON holds as the strings ``NaN``/``Infinity``/``-Infinity``; ``bytes``
(and Connect ``Decimal``'s unscaled bytes) are base64 text in JSON and raw bytes in Avro; a map
with non-string keys is a list of ``[key, value]`` pairs in JSON and a list of ``{key, value}``
records in Avro; field names change where ``scrub.invalid.names`` renamed them; an optional
struct's value names its union branch (fastavro's tuple notation). Everything else
(ints of temporal types, strings, floats, nested dicts) is written as it is: fastavro takes the
plain int of a ``date``/``time-millis``/``timestamp-millis`` and the raw bytes of a ``decimal``.

Per schema object one function is built (None when the payload needs no change at all, the usual
case for tables without binary or decimal columns), so no per-record schema work is done.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from cdc_core.naming import field_adjuster
from cdc_core.schema import Schema
from cdc_core.serializers.avro_schema import _AVRO_NAME

Datum = Callable[[Any], Any]
_b64 = base64.b64decode


def datum_function(schema: Schema, scrub: bool = False) -> Datum | None:
    """The function turning a non-null payload of ``schema`` into its fastavro value (None: identity)."""
    rename = field_adjuster("avro") if scrub else None
    return _build(schema, rename)


def _build(schema: Schema, rename: Callable[[str], str] | None) -> Datum | None:
    kind = schema.type
    if kind == "bytes":
        return _b64
    if kind in ("float32", "float64"):
        return _special_float
    if kind == "struct":
        return _struct(schema, rename)
    if kind == "array":
        assert schema.items is not None
        item = _build(schema.items, rename)
        if item is None:
            return None
        return lambda value: [None if x is None else item(x) for x in value]
    if kind == "map":
        assert schema.keys is not None and schema.values is not None
        key, val = _build(schema.keys, rename), _build(schema.values, rename)
        if schema.keys.type == "string" and not schema.keys.optional:
            if val is None:
                return None
            return lambda value: {k: None if v is None else val(v) for k, v in value.items()}
        k_fn = key or _same
        v_fn = val or _same

        def entries(value: Any) -> list[dict[str, Any]]:
            pairs = value.items() if isinstance(value, dict) else value
            return [{"key": None if k is None else k_fn(k), "value": None if v is None else v_fn(v)} for k, v in pairs]

        return entries
    return None


def _special_float(value: Any) -> Any:
    """JsonConverter writes NaN and the infinities as the strings ``NaN``/``Infinity``/``-Infinity``; Avro as floats."""
    return float(value) if isinstance(value, str) else value


def _valid_full_name(name: str) -> bool:
    return all(_AVRO_NAME.match(part) for part in name.split("."))


def _same(value: Any) -> Any:
    return value


def _branch(schema: Schema, fn: Datum | None) -> Datum:
    """A value of an optional named struct as fastavro's ``(record name, value)`` union notation.

    fastavro otherwise finds a union's branch by validating the value against each one, which
    for ``before``/``after`` costs a third of the whole write.
    """
    name = schema.name
    if fn is None:
        return lambda value: (name, value)
    return lambda value: (name, fn(value))


def _struct(schema: Schema, rename: Callable[[str], str] | None) -> Datum | None:
    changes = []
    for f in schema.fields:
        fn = _build(f.schema, rename)
        if f.schema.type == "struct" and f.schema.optional and f.schema.name and _valid_full_name(f.schema.name):
            fn = _branch(f.schema, fn)
        if fn is not None:
            changes.append((f.name, fn))
    renamed = []
    if rename is not None:
        renamed = [(f.name, rename(f.name)) for f in schema.fields if not _AVRO_NAME.match(f.name)]
    if not changes and not renamed:
        return None

    def convert(value: dict[str, Any]) -> dict[str, Any]:
        out = dict(value)
        for name, fn in changes:
            x = out.get(name)
            if x is not None:
                out[name] = fn(x)
        for old, new in renamed:
            out[new] = out.pop(old, None)
        return out

    return convert
