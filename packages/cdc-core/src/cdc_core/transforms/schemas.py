"""Deriving Connect schemas as Kafka's ``SchemaUtil``/``SchemaBuilder`` do."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cdc_core.schema import Field, Schema

_KEEP: Any = object()


def copy_schema(source: Schema, *, fields: Iterable[Field] | None = None, optional: Any = _KEEP,
                name: Any = _KEEP, default: Any = _KEEP, type: str | None = None) -> Schema:  # noqa: A002
    """A new Schema like ``source`` with some parts replaced (never its rendered-JSON cache)."""
    return Schema(
        type=type or source.type,
        optional=source.optional if optional is _KEEP else optional,
        name=source.name if name is _KEEP else name,
        version=source.version,
        doc=source.doc,
        parameters=source.parameters,
        default=source.default if default is _KEEP else default,
        fields=tuple(fields) if fields is not None else source.fields,
        items=source.items,
        keys=source.keys,
        values=source.values,
    )


def basics(source: Schema, fields: Iterable[Field]) -> Schema:
    """``SchemaUtil.copySchemaBasics(source, SchemaBuilder.struct())`` plus ``fields``: name, version, doc and
    parameters are kept; the result is required (not optional) and has no default, as in Kafka."""
    return Schema("struct", optional=False, name=source.name, version=source.version, doc=source.doc,
                  parameters=source.parameters, fields=tuple(fields))


def as_optional(source: Schema) -> Schema:
    """``SchemaUtil.copySchemaBasics(source).optional().build()``: type, name, version, doc, parameters; optional,
    without a default (struct fields, items, keys and values are kept)."""
    return Schema(source.type, optional=True, name=source.name, version=source.version, doc=source.doc,
                  parameters=source.parameters, fields=source.fields, items=source.items, keys=source.keys,
                  values=source.values)
