"""``org.apache.kafka.connect.transforms.ValueToKey``: a new key made of fields of the value."""

from __future__ import annotations

from typing import Any, ClassVar

from cdc_core.config import Config, Fields
from cdc_core.events import ChangeRecord
from cdc_core.schema import Field, Schema
from cdc_core.transforms.options import field, options
from cdc_core.transforms.sides import KAFKA
from cdc_core.transforms.structs import default_filler

FIELDS = Fields([field("fields", "list", None, required=True, allow_blank=False),
                 field("replace.null.with.default", "boolean", True)])


class ValueToKey:
    """Replaces the key with a struct of the value's ``fields`` (in the order listed; the schema unnamed)."""

    name: ClassVar[str] = "ValueToKey"
    class_names: ClassVar[tuple[str, ...]] = (f"{KAFKA}ValueToKey",)
    fields: ClassVar[Fields] = FIELDS

    def __init__(self, config: Config):
        """Read the fields that make the key."""
        o = options(config, FIELDS)
        self.names = list(o["fields"])
        self.replace_null = o["replace.null.with.default"]
        self._schemas: dict[int, tuple[Schema, Schema, Any]] = {}

    def _key_schema(self, schema: Schema) -> tuple[Schema, Any]:
        """The key schema and the default filler, per value schema."""
        found = self._schemas.get(id(schema))
        if found is not None and found[0] is schema:
            return found[1], found[2]
        by_name = {f.name: f for f in schema.fields}
        missing = [n for n in self.names if n not in by_name]
        if missing:
            raise ValueError(f"field {missing[0]!r} does not exist in the value schema {schema.name}")
        out = Schema("struct", fields=tuple(Field(n, by_name[n].schema) for n in self.names))
        fill = default_filler(schema) if self.replace_null else None
        self._schemas[id(schema)] = (schema, out, fill)
        return out, fill

    def apply(self, record: ChangeRecord) -> ChangeRecord:
        """The record with its new key (a tombstone as it is: it has no fields to take)."""
        value, schema = record.value, record.value_schema
        if value is None:
            return record
        if schema is None:
            record.key = {n: value.get(n) for n in self.names}
            record.key_schema = None
            return record
        key_schema, fill = self._key_schema(schema)
        if fill is not None:
            value = fill(value)
        record.key = {n: value.get(n) for n in self.names}
        record.key_schema = key_schema
        return record
