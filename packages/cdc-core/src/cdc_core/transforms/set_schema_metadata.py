"""``org.apache.kafka.connect.transforms.SetSchemaMetadata$Key`` / ``$Value``: a new schema name and/or version."""

from __future__ import annotations

from typing import Any, ClassVar

from cdc_core.config import Config, Fields
from cdc_core.errors import ConfigError
from cdc_core.events import ChangeRecord
from cdc_core.schema import Schema
from cdc_core.transforms.options import field, options
from cdc_core.transforms.sides import Side, variants
from cdc_core.transforms.structs import default_filler


class SetSchemaMetadata(Side):
    """Renames (``schema.name``) and/or re-versions (``schema.version``) the key or value schema; the payload stays."""

    fields: ClassVar[Fields] = Fields([field("schema.name"), field("schema.version", "int", None),
                                       field("replace.null.with.default", "boolean", True)])

    def __init__(self, config: Config):
        """Read the new name and/or version (at least one of them)."""
        o = options(config, self.fields)
        self.schema_name = o["schema.name"] or None
        self.schema_version = o["schema.version"]
        if self.schema_name is None and self.schema_version is None:
            raise ConfigError(["schema.name: set schema.name or schema.version (or both)"])
        self.replace_null = o["replace.null.with.default"]
        self._schemas: dict[int, tuple[Schema, Schema, Any]] = {}

    def apply(self, record: ChangeRecord) -> ChangeRecord:
        """The record with its schema's name/version replaced (no schema: unchanged)."""
        schema, value = self.operating(record)
        if schema is None:
            return record
        found = self._schemas.get(id(schema))
        if found is None or found[0] is not schema:
            new = Schema(schema.type, optional=schema.optional,
                         name=self.schema_name if self.schema_name is not None else schema.name,
                         version=self.schema_version if self.schema_version is not None else schema.version,
                         doc=schema.doc, parameters=schema.parameters, default=schema.default, fields=schema.fields,
                         items=schema.items, keys=schema.keys, values=schema.values)
            fill = default_filler(new) if self.replace_null and new.type == "struct" else None
            found = self._schemas[id(schema)] = (schema, new, fill)
        if found[2] is not None and value is not None:
            value = found[2](value)
        return self.replace(record, found[1], value)


SetSchemaMetadataKey, SetSchemaMetadataValue = variants(SetSchemaMetadata, "SetSchemaMetadata")
