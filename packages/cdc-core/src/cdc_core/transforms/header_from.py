"""``org.apache.kafka.connect.transforms.HeaderFrom$Key`` / ``$Value``: fields copied or moved into headers."""

from __future__ import annotations

from typing import Any, ClassVar

from cdc_core.config import Config, Fields
from cdc_core.errors import ConfigError
from cdc_core.events import ChangeRecord
from cdc_core.schema import Schema
from cdc_core.transforms.options import field, options
from cdc_core.transforms.schemas import basics
from cdc_core.transforms.sides import Side, variants
from cdc_core.transforms.structs import default_filler

FIELDS = Fields([field("fields", "list", None, required=True, allow_blank=False),
                 field("headers", "list", None, required=True, allow_blank=False),
                 field("operation", "enum", None, required=True, allowed=("move", "copy")),
                 field("replace.null.with.default", "boolean", True)])


class HeaderFrom(Side):
    """Puts ``fields`` into the headers named by ``headers`` (pairwise); ``operation=move`` also removes them."""

    fields: ClassVar[Fields] = FIELDS

    def __init__(self, config: Config):
        """Pair ``fields`` with ``headers`` (as many of each)."""
        o = options(config, FIELDS)
        if len(o["fields"]) != len(o["headers"]):
            raise ConfigError(["headers: must have the same number of elements as fields"])
        self.pairs = list(zip(o["fields"], o["headers"]))
        self.move = o["operation"] == "move"
        self.replace_null = o["replace.null.with.default"]
        self._plans: dict[int, tuple[Schema, Schema, Any, dict[str, Schema]]] = {}
        #: A schemaless record's headers have no schema (``headers.add(name, value, null)``).
        self._no_schemas: dict[str, Schema | None] = {header: None for _, header in self.pairs}

    def _plan(self, schema: Schema) -> tuple[Schema, Any, dict[str, Schema]]:
        """The schema without moved fields, the default filler and the headers' schemas, per input schema."""
        found = self._plans.get(id(schema))
        if found is not None and found[0] is schema:
            return found[1], found[2], found[3]
        names = {f.name for f in schema.fields}
        for name, _ in self.pairs:
            if name not in names:
                raise ValueError(f"field {name!r} does not exist in schema {schema.name}")
        moved = {n for n, _ in self.pairs}
        out = basics(schema, [f for f in schema.fields if f.name not in moved]) if self.move else schema
        fill = default_filler(schema) if self.replace_null else None
        by_name = {f.name: f.schema for f in schema.fields}
        header_schemas = {header: by_name[name] for name, header in self.pairs}  # the field's schema, as Kafka
        self._plans[id(schema)] = (schema, out, fill, header_schemas)
        return out, fill, header_schemas

    def apply(self, record: ChangeRecord) -> ChangeRecord:
        """The record with the headers added (and the fields removed when moved)."""
        schema, value = self.operating(record)
        if value is None:
            return record
        headers = dict(record.headers)
        if schema is None:
            for name, header in self.pairs:
                headers[header] = value.get(name)
            record.headers = headers
            record.set_header_schemas(self._no_schemas)
            if self.move:
                moved = {n for n, _ in self.pairs}
                return self.replace(record, None, {k: v for k, v in value.items() if k not in moved})
            return record
        out, fill, header_schemas = self._plan(schema)
        if fill is not None:
            value = fill(value)
        for name, header in self.pairs:
            headers[header] = value.get(name)
        record.headers = headers
        record.set_header_schemas(header_schemas)
        if self.move:
            moved = {n for n, _ in self.pairs}
            return self.replace(record, out, {k: v for k, v in value.items() if k not in moved})
        return record


HeaderFromKey, HeaderFromValue = variants(HeaderFrom, "HeaderFrom")
