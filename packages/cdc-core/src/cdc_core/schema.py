"""Kafka Connect schemas: the types of keys and values, rendered as Kafka's JsonConverter writes them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

#: The primitive and composite type names of Kafka Connect (``Schema.Type.getName()``).
PRIMITIVE_TYPES = frozenset(
    {"int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string", "bytes"}
)
COMPOSITE_TYPES = frozenset({"struct", "array", "map"})
#: Where JsonConverter's schema names differ from Connect's: ``JsonSchema.FLOAT_TYPE_NAME`` and
#: ``DOUBLE_TYPE_NAME``. Its reader refuses ``float32``/``float64`` ("Unknown schema type").
JSON_TYPE_NAMES = {"float32": "float", "float64": "double"}


@dataclass(frozen=True, eq=False, slots=True)
class Field:
    """One named field of a struct schema."""

    name: str
    schema: Schema


@dataclass(frozen=True, eq=False, slots=True)
class Schema:
    """An immutable Kafka Connect schema; built once per table version and shared by all its events.

    ``type`` is the Connect type name (``int32``, ``float64``, ``struct``, ...); ``to_json``
    renders it under JsonConverter's name.

    ``default`` is the default value in its JSON form (what JsonConverter writes for it), or
    ``None`` for no default. Schemas compare by identity: serializers cache their rendered JSON
    by ``id(schema)``, so build one object per table version and reuse it.
    """

    type: str
    optional: bool = False
    name: str | None = None
    version: int | None = None
    doc: str | None = None
    parameters: dict[str, str] | None = None
    default: Any = None
    fields: tuple[Field, ...] = ()
    items: Schema | None = None
    keys: Schema | None = None
    values: Schema | None = None
    _json: list = field(default_factory=list, repr=False)
    #: ``cdc_core.serializers.defaults`` caches its payload functions here, by replace.null.with.default.
    _fillers: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.type not in PRIMITIVE_TYPES and self.type not in COMPOSITE_TYPES:
            raise ValueError(f"unknown Kafka Connect schema type {self.type!r}")

    def field(self, name: str) -> Field:
        """Return the struct field called ``name`` (KeyError if there is none)."""
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def field_names(self) -> tuple[str, ...]:
        """The names of a struct's fields, in order."""
        return tuple(f.name for f in self.fields)

    def with_optional(self, optional: bool) -> Schema:
        """Return a copy of this schema with ``optional`` set (same name, parameters and default)."""
        if optional == self.optional:
            return self
        return Schema(
            type=self.type,
            optional=optional,
            name=self.name,
            version=self.version,
            doc=self.doc,
            parameters=self.parameters,
            default=self.default,
            fields=self.fields,
            items=self.items,
            keys=self.keys,
            values=self.values,
        )

    def to_json(self) -> dict[str, Any]:
        """Render as JsonConverter does: type, fields/items/keys/values, optional, name, version, doc, parameters, default.

        ``type`` is JsonConverter's name (``float``/``double`` for FLOAT32/FLOAT64), while
        ``Schema.type`` keeps Connect's own (``float32``/``float64``).
        """
        if self._json:
            return self._json[0]
        out: dict[str, Any] = {"type": JSON_TYPE_NAMES.get(self.type, self.type)}
        if self.type == "struct":
            out["fields"] = [{**f.schema.to_json(), "field": f.name} for f in self.fields]
        elif self.type == "array":
            assert self.items is not None
            out["items"] = self.items.to_json()
        elif self.type == "map":
            assert self.keys is not None and self.values is not None
            out["keys"] = self.keys.to_json()
            out["values"] = self.values.to_json()
        out["optional"] = self.optional
        if self.name is not None:
            out["name"] = self.name
        if self.version is not None:
            out["version"] = self.version
        if self.doc is not None:
            out["doc"] = self.doc
        if self.parameters is not None:
            out["parameters"] = dict(self.parameters)
        if self.default is not None:
            out["default"] = self.default
        self._json.append(out)
        return out

    def json_bytes(self) -> bytes:
        """The rendered schema as compact JSON bytes (computed once)."""
        if len(self._json) < 2:
            self.to_json()
            self._json.append(orjson.dumps(self._json[0]))
        return self._json[1]


def struct(name: str | None, fields: list[tuple[str, Schema]], *, optional: bool = False, version: int | None = None) -> Schema:
    """Build a struct schema from ``(name, schema)`` pairs."""
    return Schema(
        "struct",
        optional=optional,
        name=name,
        version=version,
        fields=tuple(Field(n, s) for n, s in fields),
    )


def primitive(type_: str, optional: bool = False, **kw: Any) -> Schema:
    """Build a primitive schema (``kw``: name, version, parameters, default, doc)."""
    return Schema(type_, optional=optional, **kw)


# Frequently used schemas, shared.
STRING = Schema("string")
OPTIONAL_STRING = Schema("string", optional=True)
INT64 = Schema("int64")
OPTIONAL_INT64 = Schema("int64", optional=True)
INT32 = Schema("int32")
OPTIONAL_INT32 = Schema("int32", optional=True)
BOOLEAN = Schema("boolean")
OPTIONAL_BOOLEAN = Schema("boolean", optional=True)
OPTIONAL_BYTES = Schema("bytes", optional=True)
