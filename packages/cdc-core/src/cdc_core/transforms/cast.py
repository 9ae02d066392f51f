"""``org.apache.kafka.connect.transforms.Cast$Key`` / ``$Value``: fields (or the whole value) to another type.

``spec`` is ``field:type,...`` or one ``type`` for a primitive key/value; types int8, int16, int32,
int64, float32, float64, boolean, string. Numbers narrow as Java's casts do; a Connect Decimal
casts to a number or its plain string; bytes cast to string give their base64 (as JSON already
holds them). Other logical types (Date, Time, Timestamp) are refused with an error naming the field.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, ClassVar

from cdc_core.config import Config, Fields
from cdc_core.errors import ConfigError
from cdc_core.events import ChangeRecord
from cdc_core.schema import Field, Schema
from cdc_core.transforms.connect_values import (INT_BITS, as_python, java_double_string, kind, to_float32, wrap)
from cdc_core.transforms.options import field, options
from cdc_core.transforms.schemas import basics
from cdc_core.transforms.sides import Side, variants
from cdc_core.transforms.structs import default_filler

TARGETS = ("int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string")
FIELDS = Fields([field("spec", "list", None, required=True, allow_blank=False),
                 field("replace.null.with.default", "boolean", True)])
_INPUTS = frozenset(TARGETS) | {"decimal", "bytes"}


def cast_value(value: Any, source: Schema, target: str, where: str) -> Any:
    """``value`` (JSON form, of ``source``) cast to ``target``, as Kafka's ``Cast.castValueToType``."""
    if value is None:
        return None
    k = kind(source)
    if k not in _INPUTS or (source.name is not None and k not in ("decimal",) and source.name.startswith(
            "org.apache.kafka.connect.data.")):
        raise ValueError(f"{where}: Cast does not support the type {source.name or source.type}")
    if k == "bytes" and target != "string":
        raise ValueError(f"{where}: bytes can only be cast to string")
    v = as_python(value, source)
    if target in INT_BITS:
        bits = INT_BITS[target]
        if isinstance(v, bool):
            return 1 if v else 0
        if isinstance(v, str):
            n = int(v.strip())  # Java's parse: a plain integer in range
            if wrap(n, bits) != n:
                raise ValueError(f"{where}: {v!r} is out of range for {target}")
            return n
        if isinstance(v, float):
            if v != v:
                return 0
            n = max(min(int(v), 2**31 - 1 if bits < 64 else 2**63 - 1), -(2**31) if bits < 64 else -(2**63))
            return wrap(n, bits)
        if isinstance(v, Decimal):
            return wrap(int(v), bits)
        return wrap(int(v), bits)
    if target in ("float32", "float64"):
        if isinstance(v, bool):
            f = 1.0 if v else 0.0
        elif isinstance(v, str):
            f = float(v.strip())
        else:
            f = float(v)
        return to_float32(f) if target == "float32" else f
    if target == "boolean":
        if isinstance(v, bool):
            return v
        if isinstance(v, str):
            return v.strip().lower() == "true"
        return int(v) != 0
    # string
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return java_double_string(v, float32=source.type == "float32")
    if isinstance(v, Decimal):
        return format(v, "f")
    return str(v)


class Cast(Side):
    """Casts fields (``spec=a:int32,b:string``) or a primitive key/value (``spec=int64``) to another type."""

    fields: ClassVar[Fields] = FIELDS

    def __init__(self, config: Config):
        """Parse ``spec`` into field casts or one whole-value cast."""
        o = options(config, FIELDS)
        self.casts: dict[str, str] = {}
        self.whole: str | None = None
        for item in o["spec"]:
            name, sep, target = item.rpartition(":")
            target = target.strip().lower()
            if target not in TARGETS:
                raise ConfigError([f"spec: {item!r}: the type must be one of {', '.join(TARGETS)}"])
            if not sep:
                if len(o["spec"]) > 1:
                    raise ConfigError(["spec: a whole-value cast must be the only entry"])
                self.whole = target
            else:
                self.casts[name.strip()] = target
        self.replace_null = o["replace.null.with.default"]
        self._schemas: dict[int, tuple[Schema, Schema, list, Any]] = {}

    def _plan(self, schema: Schema) -> tuple[Schema, list, Any]:
        """The cast schema, the fields to cast and the default filler, per input schema."""
        found = self._schemas.get(id(schema))
        if found is not None and found[0] is schema:
            return found[1], found[2], found[3]
        fields, casts = [], []
        for f in schema.fields:
            target = self.casts.get(f.name)
            if target is None:
                fields.append(f)
                continue
            default = None
            if f.schema.default is not None:
                default = cast_value(f.schema.default, f.schema, target, f"default of {f.name}")
            fields.append(Field(f.name, Schema(target, optional=f.schema.optional, default=default)))
            casts.append((f.name, f.schema, target))
        out = basics(schema, fields)
        fill = default_filler(schema) if self.replace_null else None
        self._schemas[id(schema)] = (schema, out, casts, fill)
        return out, casts, fill

    def apply(self, record: ChangeRecord) -> ChangeRecord:
        """The record with its fields (or whole key/value) cast (a null key or value as it is)."""
        schema, value = self.operating(record)
        if value is None:
            return record
        if self.whole is not None:
            if schema is None:
                return self.replace(record, None, cast_value(value, Schema(_json_type(value)), self.whole, "value"))
            out = Schema(self.whole, optional=schema.optional)
            return self.replace(record, out, cast_value(value, schema, self.whole, "value"))
        if schema is None:
            out_value = dict(value)
            for name, target in self.casts.items():
                if name in out_value and out_value[name] is not None:
                    out_value[name] = cast_value(out_value[name], Schema(_json_type(out_value[name])), target, name)
            return self.replace(record, None, out_value)
        out, casts, fill = self._plan(schema)
        row = dict(fill(value) if fill is not None else value)
        for name, source, target in casts:
            row[name] = cast_value(row.get(name), source, target, name)
        return self.replace(record, out, row)


def _json_type(value: Any) -> str:
    """The Connect type of a schemaless JSON value."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    raise ValueError(f"Cast does not support values of type {type(value).__name__} without a schema")


CastKey, CastValue = variants(Cast, "Cast")
