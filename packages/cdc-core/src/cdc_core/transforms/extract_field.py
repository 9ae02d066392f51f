"""``org.apache.kafka.connect.transforms.ExtractField$Key`` / ``$Value``: one field in place of the whole struct."""

from __future__ import annotations

from typing import Any, ClassVar

from cdc_core.config import Config, Fields
from cdc_core.events import ChangeRecord
from cdc_core.schema import Schema
from cdc_core.transforms.options import field, options, required
from cdc_core.transforms.sides import Side, variants

FIELDS = Fields([required("field"), field("field.syntax.version", "enum", "v1", allowed=("v1", "v2")),
                 field("replace.null.with.default", "boolean", True)])


class ExtractField(Side):
    """Replaces the key or value with its field ``field`` (a dotted path with ``field.syntax.version=V2``)."""

    fields: ClassVar[Fields] = FIELDS

    def __init__(self, config: Config):
        """Read the field (or V2 path) to extract."""
        o = options(config, FIELDS)
        self.path = o["field"].split(".") if o["field.syntax.version"] == "v2" else [o["field"]]
        self.replace_null = o["replace.null.with.default"]
        self._schemas: dict[int, tuple[Schema, Schema, Any]] = {}

    def _schema(self, schema: Schema) -> tuple[Schema, Any]:
        """The extracted field's schema and default, per input schema."""
        found = self._schemas.get(id(schema))
        if found is not None and found[0] is schema:
            return found[1], found[2]
        current = schema
        for step in self.path:
            f = next((f for f in current.fields if f.name == step), None) if current.type == "struct" else None
            if f is None:
                raise ValueError(f"unknown field: {'.'.join(self.path)} (in schema {schema.name})")
            current = f.schema
        self._schemas[id(schema)] = (schema, current, current.default if self.replace_null else None)
        return current, self._schemas[id(schema)][2]

    def apply(self, record: ChangeRecord) -> ChangeRecord:
        """The record with the field's value (null where the struct or a step of the path is null)."""
        schema, value = self.operating(record)
        if schema is None:
            if value is None:
                return record
            for step in self.path:
                value = value.get(step) if isinstance(value, dict) else None
            return self.replace(record, None, value)
        out, default = self._schema(schema)
        for step in self.path:
            if value is None:
                break
            value = value.get(step)
        if value is None:
            value = default
        return self.replace(record, out, value)


ExtractFieldKey, ExtractFieldValue = variants(ExtractField, "ExtractField")
