"""``org.apache.kafka.connect.transforms.Flatten$Key`` / ``$Value``: nested structs as ``outer.inner`` fields.

As Kafka 3.9: struct fields are flattened with ``delimiter`` (default ``.``), arrays and maps are
kept as they are; a field under an optional struct becomes optional and keeps its default; a null
in a present struct reads as its field's default (``Struct.get``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from cdc_core.config import Config, Fields
from cdc_core.events import ChangeRecord
from cdc_core.schema import Field, Schema
from cdc_core.transforms.options import field, options
from cdc_core.transforms.schemas import basics
from cdc_core.transforms.sides import Side, variants

FIELDS = Fields([field("delimiter", "string", ".")])


class Flatten(Side):
    """Flattens nested structs (or maps, without a schema) into one level."""

    fields: ClassVar[Fields] = FIELDS

    def __init__(self, config: Config):
        """Read the delimiter."""
        self.delimiter = options(config, FIELDS)["delimiter"]
        self._plans: dict[int, tuple[Schema, Schema, list]] = {}

    def _flat_fields(self, schema: Schema, prefix: str, optional: bool, out: list, paths: list, path: tuple) -> None:
        """Append the flattened fields of ``schema`` and their paths."""
        for f in schema.fields:
            name = f"{prefix}{self.delimiter}{f.name}" if prefix else f.name
            is_optional = optional or f.schema.optional
            if f.schema.type == "struct":
                self._flat_fields(f.schema, name, is_optional, out, paths, path + (f.name,))
                continue
            s = f.schema
            out.append(Field(name, Schema(s.type, optional=is_optional, name=s.name, version=s.version, doc=s.doc,
                                          parameters=s.parameters, default=s.default, items=s.items, keys=s.keys,
                                          values=s.values)))
            paths.append((name, path + (f.name,), s.default))

    def _plan(self, schema: Schema) -> tuple[Schema, list]:
        """The flattened schema and each field's path, per input schema."""
        found = self._plans.get(id(schema))
        if found is not None and found[0] is schema:
            return found[1], found[2]
        fields: list[Field] = []
        paths: list = []
        self._flat_fields(schema, "", schema.optional, fields, paths, ())
        out = basics(schema, fields)
        self._plans[id(schema)] = (schema, out, paths)
        return out, paths

    def _flat_map(self, value: dict[str, Any], prefix: str, out: dict[str, Any]) -> None:
        """Flatten a schemaless map into ``out``."""
        for k, v in value.items():
            name = f"{prefix}{self.delimiter}{k}" if prefix else k
            if isinstance(v, dict):
                self._flat_map(v, name, out)
            else:
                out[name] = v

    def apply(self, record: ChangeRecord) -> ChangeRecord:
        """The record with its key or value flattened (a null one as it is)."""
        schema, value = self.operating(record)
        if value is None:
            return record
        if schema is None:
            out: dict[str, Any] = {}
            self._flat_map(value, "", out)
            return self.replace(record, None, out)
        if schema.type != "struct":
            return record
        new, paths = self._plan(schema)
        row: dict[str, Any] = {}
        for name, path, default in paths:
            v: Any = value
            for step in path:
                if v is None:
                    break
                v = v.get(step)
                if v is None and step == path[-1]:
                    v = default
            row[name] = v
        return self.replace(record, new, row)


FlattenKey, FlattenValue = variants(Flatten, "Flatten")
