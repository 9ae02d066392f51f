"""``org.apache.kafka.connect.transforms.HoistField$Key`` / ``$Value``: the key or value wrapped in a one-field struct."""

from __future__ import annotations

from typing import Any, ClassVar

from cdc_core.config import Config, Fields
from cdc_core.events import ChangeRecord
from cdc_core.schema import Field, Schema
from cdc_core.transforms.options import options, required
from cdc_core.transforms.sides import Side, variants


class HoistField(Side):
    """Wraps the key or value as ``{field: <it>}`` (an unnamed required struct with schemas)."""

    fields: ClassVar[Fields] = Fields([required("field")])

    def __init__(self, config: Config):
        """Read the field name."""
        self.field = options(config, self.fields)["field"]
        self._schemas: dict[int, tuple[Schema, Schema]] = {}

    def apply(self, record: ChangeRecord) -> ChangeRecord:
        """The record with its key or value hoisted."""
        schema, value = self.operating(record)
        if schema is None:
            return self.replace(record, None, {self.field: value})
        found = self._schemas.get(id(schema))
        if found is None or found[0] is not schema:
            found = self._schemas[id(schema)] = (schema, Schema("struct", fields=(Field(self.field, schema),)))
        out: Any = {self.field: value}
        return self.replace(record, found[1], out)


HoistFieldKey, HoistFieldValue = variants(HoistField, "HoistField")
