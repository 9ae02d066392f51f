"""Kafka JsonConverter's grammar: the schemas and payloads its writer produces and its reader accepts.

``schema_problems`` checks a rendered schema the way ``JsonConverter.asJsonSchema`` writes one
(the type names of ``JsonSchema``, keys in its order: type, fields | items | keys + values,
optional, name, version, doc, parameters, default, then ``field`` for a struct's fields) and
``asConnectSchema`` reads one (``optional`` a boolean, parameters string to string, a default
of the schema's type). ``payload_problems`` checks a payload against its schema as
``toConnectData`` would read it, and type-exact, as JsonConverter would have written it (an int64
is a JSON integer, a double a JSON float or ``"NaN"``/``"Infinity"``/``"-Infinity"``, struct
fields all present and in schema order). ``record_problems`` checks one serialized key or value.

Used by the test suite on every record cdc serializes (``CDC_CHECK_JSON=1``) and by anyone who
wants to check a stream; it is never on a production path.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import orjson

#: JsonConverter's schema type names (``JsonSchema.*_TYPE_NAME``).
PRIMITIVE_TYPE_NAMES = frozenset({"boolean", "int8", "int16", "int32", "int64", "float", "double", "bytes", "string"})
TYPE_NAMES = PRIMITIVE_TYPE_NAMES | {"struct", "array", "map"}
#: The keys of a schema, in the order ``asJsonSchema`` writes them.
_KEY_ORDER = {k: i for i, k in enumerate(
    ("type", "fields", "items", "keys", "values", "optional", "name", "version", "doc", "parameters", "default", "field"))}
_OWN_KEYS = {"struct": {"fields"}, "array": {"items"}, "map": {"keys", "values"}}
_INT_RANGES = {"int8": 1 << 7, "int16": 1 << 15, "int32": 1 << 31, "int64": 1 << 63}
_SPECIAL_DOUBLES = frozenset({"NaN", "Infinity", "-Infinity"})


def schema_problems(schema: Any, path: str = "schema", *, in_struct: bool = False) -> list[str]:
    """What in a rendered schema JsonConverter would not have written or cannot read (empty: none)."""
    if not isinstance(schema, dict):
        return [f"{path}: a schema must be a JSON object, not {schema!r}"]
    out: list[str] = []
    kind = schema.get("type")
    if not isinstance(kind, str) or kind not in TYPE_NAMES:
        return [f"{path}.type: {kind!r} is not a JsonConverter schema type (Unknown schema type)"]
    keys = list(schema)
    unknown = [k for k in keys if k not in _KEY_ORDER]
    if unknown:
        out.append(f"{path}: unknown keys {unknown}")
    ordered = [k for k in keys if k in _KEY_ORDER]
    if ordered != sorted(ordered, key=_KEY_ORDER.__getitem__):
        out.append(f"{path}: keys {keys} are not in JsonConverter's order")
    for k in ("fields", "items", "keys", "values"):
        if k in schema and k not in _OWN_KEYS.get(kind, ()):
            out.append(f"{path}: a {kind} schema has no {k!r}")
    for k in _OWN_KEYS.get(kind, ()):
        if k not in schema:
            out.append(f"{path}: a {kind} schema needs {k!r}")
    if "field" in schema and not in_struct:
        out.append(f"{path}: 'field' outside a struct's fields")
    if in_struct and not isinstance(schema.get("field"), str):
        out.append(f"{path}: a struct field needs its name in 'field' (a string)")
    if not isinstance(schema.get("optional"), bool):
        out.append(f"{path}.optional: JsonConverter always writes a boolean, got {schema.get('optional')!r}")
    if "name" in schema and not isinstance(schema["name"], str):
        out.append(f"{path}.name: {schema['name']!r} is not a string")
    version = schema.get("version")
    if "version" in schema and (not isinstance(version, int) or isinstance(version, bool)):
        out.append(f"{path}.version: {version!r} is not an integer")
    if "doc" in schema and not isinstance(schema["doc"], str):
        out.append(f"{path}.doc: {schema['doc']!r} is not a string")
    params = schema.get("parameters")
    if "parameters" in schema and (
            not isinstance(params, dict) or not all(isinstance(v, str) for v in params.values())):
        out.append(f"{path}.parameters: must map strings to strings (Schema parameters must have string values), "
                   f"got {params!r}")
    if kind == "struct" and isinstance(schema.get("fields"), list):
        seen: set[str] = set()
        for i, f in enumerate(schema["fields"]):
            name = f.get("field") if isinstance(f, dict) else None
            out += schema_problems(f, f"{path}.fields[{i}]({name})", in_struct=True)
            if name in seen:
                out.append(f"{path}.fields[{i}]: duplicate field {name!r}")
            seen.add(name)
    elif kind == "struct" and "fields" in schema:
        out.append(f"{path}.fields: not an array")
    for k in ("items", "keys", "values"):
        if k in schema and kind in ("array", "map"):
            out += schema_problems(schema[k], f"{path}.{k}")
    if "default" in schema:
        if schema["default"] is None:
            out.append(f"{path}.default: JsonConverter writes no default rather than a null one")
        elif not out:
            out += payload_problems(schema, schema["default"], f"{path}.default")
    return out


def payload_problems(schema: dict[str, Any], value: Any, path: str = "payload") -> list[str]:
    """What in ``value`` a JsonConverter would not have written under ``schema`` (a valid schema)."""
    if value is None:
        if schema.get("optional") or schema.get("default") is not None:
            return []
        return [f"{path}: Invalid null value for required {schema['type'].upper()} field"]
    kind = schema["type"]
    if kind in _INT_RANGES:
        bound = _INT_RANGES[kind]
        if not isinstance(value, int) or isinstance(value, bool) or not -bound <= value < bound:
            return [f"{path}: {value!r} is not an {kind}"]
        return []
    if kind in ("float", "double"):
        if isinstance(value, float) or (isinstance(value, str) and value in _SPECIAL_DOUBLES):
            return []
        return [f"{path}: {value!r} is not a {kind} as JsonConverter writes one (a JSON float, or NaN/Infinity)"]
    if kind == "boolean":
        return [] if isinstance(value, bool) else [f"{path}: {value!r} is not a boolean"]
    if kind == "string":
        return [] if isinstance(value, str) else [f"{path}: {value!r} is not a string"]
    if kind == "bytes":
        if not isinstance(value, str):
            return [f"{path}: {value!r} is not base64 bytes"]
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return [f"{path}: {value!r} is not base64 bytes"]
        return []
    if kind == "struct":
        if not isinstance(value, dict):
            return [f"{path}: {value!r} is not a struct (JSON object)"]
        names = [f["field"] for f in schema["fields"]]
        if list(value) != names:
            return [f"{path}: fields {list(value)} are not the schema's {names} in order"]
        out: list[str] = []
        for f in schema["fields"]:
            out += payload_problems(f, value[f["field"]], f"{path}.{f['field']}")
        return out
    if kind == "array":
        if not isinstance(value, list):
            return [f"{path}: {value!r} is not an array"]
        out = []
        for i, item in enumerate(value):
            out += payload_problems(schema["items"], item, f"{path}[{i}]")
        return out
    if kind == "map":
        out = []
        if schema["keys"]["type"] == "string":
            if not isinstance(value, dict):
                return [f"{path}: a map with string keys is a JSON object, not {value!r}"]
            for k, v in value.items():
                out += payload_problems(schema["values"], v, f"{path}[{k!r}]")
            return out
        if not isinstance(value, list) or not all(isinstance(p, list) and len(p) == 2 for p in value):
            return [f"{path}: a map with non-string keys is an array of [key, value] pairs, not {value!r}"]
        for i, (k, v) in enumerate(value):
            out += payload_problems(schema["keys"], k, f"{path}[{i}].key")
            out += payload_problems(schema["values"], v, f"{path}[{i}].value")
        return out
    return [f"{path}: unknown type {kind!r}"]


def record_problems(data: bytes | None, schemas_enable: bool, what: str = "value",
                    checked_schemas: dict[bytes, list[str]] | None = None) -> list[str]:
    """What in one serialized key or value JsonConverter would not have written.

    ``checked_schemas`` caches the verdict on each distinct schema text (schemas repeat).
    """
    if data is None:
        return []
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        return [f"{what}: not JSON ({e})"]
    if not schemas_enable:
        return []
    if not isinstance(doc, dict) or list(doc) != ["schema", "payload"]:
        return [f"{what}: with schemas.enable the envelope is {{\"schema\", \"payload\"}}, got keys "
                f"{list(doc) if isinstance(doc, dict) else type(doc).__name__}"]
    schema = doc["schema"]
    if schema is None:
        return []
    if checked_schemas is not None:
        key = orjson.dumps(schema)
        problems = checked_schemas.get(key)
        if problems is None:
            problems = checked_schemas[key] = schema_problems(schema, f"{what}.schema")
    else:
        problems = schema_problems(schema, f"{what}.schema")
    if problems:
        return problems
    return payload_problems(schema, doc["payload"], f"{what}.payload")
