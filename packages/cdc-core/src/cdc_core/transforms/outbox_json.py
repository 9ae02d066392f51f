"""``table.expand.json.payload``: a JSON text payload as a struct, with a Connect schema inferred from it.

As Debezium's ``JsonSchemaData``: objects become optional structs named by their path
(``payload``, ``payload.lineItems``), strings optional strings, booleans optional booleans, numbers
optional int32 / int64 (by size) or float64, arrays optional arrays of their first non-null
element's schema. The schemas of an array's object elements are merged when they differ (the
merged struct is then not optional: Debezium copies only the name of the first); Debezium merges
them in the order of a Java HashSet, which is not stable across runs, cdc in the order they first
appear, so the merged fields' order may differ from Debezium's. Null fields
and empty arrays are left out, or with ``table.json.payload.null.behavior=optional_bytes`` a null
is an optional bytes field. A mixed array raises ``JsonExpansionError``; the router then keeps the
payload as it was, with a warning, as Debezium does.

Inferred schemas are interned: one Schema object per distinct shape, so serializers cache them.
"""

from __future__ import annotations

from typing import Any

import orjson

from cdc_core.schema import Schema, Field

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_PRIMITIVES = {t: Schema(t, optional=True) for t in ("string", "boolean", "int32", "int64", "float64", "bytes")}
#: The most distinct shapes kept; past it the cache starts over (Debezium keeps 10,000 value schemas).
MAX_SHAPES = 10_000


class JsonExpansionError(ValueError):
    """The payload cannot be expanded (not JSON, or an array Debezium refuses); the message says why."""


class JsonExpander:
    """Expands JSON payload texts into (schema, value) pairs, interning the inferred schemas."""

    def __init__(self, null_as_optional_bytes: bool = False):
        self.null_as_bytes = null_as_optional_bytes
        self._schemas: dict[Any, Schema] = {}

    def expand(self, field_name: str, text: str) -> tuple[Schema, Any]:
        """The schema and the JSON-ready value of the payload ``text`` (a JSON object or array)."""
        if not text.startswith(("{", "[")):
            raise JsonExpansionError(f"Unable to parse payload starting with {text[:1]!r}")
        try:
            document = orjson.loads(text)
        except orjson.JSONDecodeError as e:
            raise JsonExpansionError(f"the payload is not JSON: {e}") from None
        shape = self._shape(field_name, document)
        if shape is None:  # an empty array: Debezium would fail on its null schema
            raise JsonExpansionError("the payload is an empty array, which has no schema")
        schema = self._schema(shape)
        return schema, _value(document, schema)

    def _shape(self, key: str | None, node: Any) -> Any:
        """A hashable description of the schema of ``node`` (None: no schema, the field is left out)."""
        if isinstance(node, str):
            return "string"
        if isinstance(node, bool):
            return "boolean"
        if isinstance(node, int):
            if _INT32[0] <= node <= _INT32[1]:
                return "int32"
            if _INT64[0] <= node <= _INT64[1]:
                return "int64"
            raise JsonExpansionError(f"the number {node} is too large for int64")
        if isinstance(node, float):
            return "float64"
        if node is None:
            return "bytes" if self.null_as_bytes else None
        if isinstance(node, list):
            if not node:
                return None
            return ("array", self._array_shape(key, node))
        fields: list[tuple[str, Any]] = []
        seen: set[str] = set()
        for name, value in node.items():
            shape = self._shape(f"{key}.{name}", value)
            if shape is not None and name not in seen:
                seen.add(name)
                fields.append((name, shape))
        return ("struct", key, tuple(fields), True)

    def _array_shape(self, key: str | None, array: list[Any]) -> Any:
        """The shape of a non-empty array's elements (Debezium's ``toConnectSchemaWithCycles``)."""
        sample = _first_element(array, self)
        if isinstance(sample, dict):
            distinct = list(dict.fromkeys(self._shape(key, e) for e in array if isinstance(e, dict)))
            merged: Any = distinct[0]
            for shape in distinct[1:]:
                merged = _merge(merged, shape)
            return merged
        shape = self._shape(None, sample)
        if shape is None:
            shown = orjson.dumps(array).decode()[:60]
            raise JsonExpansionError(f"an array of the payload has no element type ({shown})")
        return shape

    def _schema(self, shape: Any) -> Schema:
        """The one Schema object of ``shape``."""
        schema = self._schemas.get(shape)
        if schema is None:
            if len(self._schemas) >= MAX_SHAPES:
                self._schemas.clear()
            if isinstance(shape, str):
                schema = _PRIMITIVES[shape]
            elif shape[0] == "array":
                schema = Schema("array", optional=True, items=self._schema(shape[1]))
            else:
                schema = Schema("struct", optional=shape[3], name=shape[1],
                                fields=tuple(Field(n, self._schema(s)) for n, s in shape[2]))
            self._schemas[shape] = schema
        return schema


def _first_element(array: list[Any], expander: JsonExpander) -> Any:
    """The first non-null element; JsonExpansionError if the elements are of different JSON types or number types."""
    ref: Any = None
    ref_shape: Any = None
    for element in array:
        if element is None:
            continue
        if ref is None:
            ref = element
        if _json_type(element) != _json_type(ref):
            raise JsonExpansionError(f"Field is not a homogenous array ({_json_type(ref)} x {_json_type(element)}).")
        if _json_type(ref) == "number":
            ref_shape = ref_shape or expander._shape(None, ref)
            if expander._shape(None, element) != ref_shape:
                raise JsonExpansionError("Field is not a homogenous array, different number types")
    return ref


def _json_type(v: Any) -> str:
    """The JSON type of a parsed value (Jackson's node type)."""
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return "null"


def _merge(left: Any, right: Any) -> Any:
    """Debezium's ``mergeSchema`` of two struct shapes: the fields of both, a bytes field giving way to a typed one.

    The result is not optional: Debezium's ``SchemaUtil.copySchemaBasics`` copies the name, not optionality.
    """
    fields = dict(left[2])
    for name, shape in right[2]:
        old = fields.get(name)
        if old is None or (old != shape and old == "bytes" and shape != "bytes"):
            fields[name] = shape
    return ("struct", left[1], tuple(fields.items()), False)


def _value(node: Any, schema: Schema) -> Any:
    """The JSON-ready value of ``node`` under ``schema``: struct fields in schema order, absent ones null."""
    if schema.type == "struct":
        if not isinstance(node, dict):
            return None
        return {f.name: (_value(node[f.name], f.schema) if f.name in node else None) for f in schema.fields}
    if schema.type == "array":
        assert schema.items is not None
        return [_value(e, schema.items) for e in node] if isinstance(node, list) else None
    if schema.type == "float64" and isinstance(node, int) and not isinstance(node, bool):
        return float(node)
    return node
