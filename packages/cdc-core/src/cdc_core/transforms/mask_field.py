"""``org.apache.kafka.connect.transforms.MaskField$Key`` / ``$Value``: fields replaced by a neutral value or ``replacement``.

Without ``replacement`` a field becomes its type's empty value (0, 0.0, false, "", an empty array or
map, a zero Decimal, the epoch for temporal types); with it, ``replacement`` parsed as the field's
type (numbers, booleans as Java's ``parseBoolean``, strings). The schema is unchanged.
"""

from __future__ import annotations

import base64
from typing import Any, ClassVar

from cdc_core.config import Config, Fields
from cdc_core.events import ChangeRecord
from cdc_core.schema import Schema
from cdc_core.transforms.connect_values import DECIMAL, INT_BITS, to_float32, wrap
from cdc_core.transforms.options import field, options
from cdc_core.transforms.sides import Side, variants
from cdc_core.transforms.structs import default_filler

FIELDS = Fields([field("fields", "list", None, required=True, allow_blank=False), field("replacement", "string", None),
                 field("replace.null.with.default", "boolean", True)])
_ZERO_DECIMAL = base64.b64encode(b"\x00").decode()


def empty_value(schema: Schema, where: str) -> Any:
    """The masked value of a field without ``replacement``."""
    if schema.name == DECIMAL:
        return _ZERO_DECIMAL
    t = schema.type
    if t in INT_BITS:
        return 0
    if t in ("float32", "float64"):
        return 0.0
    if t == "boolean":
        return False
    if t == "string":
        return ""
    if t == "array":
        return []
    if t == "map":
        return {}
    raise ValueError(f"{where}: MaskField cannot mask a value of type {schema.name or t}")


def replaced_value(schema: Schema, replacement: str, where: str) -> Any:
    """``replacement`` as a value of the field's type."""
    t = schema.type
    if schema.name is not None and schema.name.startswith("org.apache.kafka.connect.data."):
        raise ValueError(f"{where}: MaskField cannot replace a value of type {schema.name} with a string")
    if t in INT_BITS:
        n = int(replacement.strip())
        if wrap(n, INT_BITS[t]) != n:
            raise ValueError(f"{where}: {replacement!r} is out of range for {t}")
        return n
    if t == "float32":
        return to_float32(float(replacement))
    if t == "float64":
        return float(replacement)
    if t == "boolean":
        return replacement.lower() == "true"
    if t == "string":
        return replacement
    raise ValueError(f"{where}: MaskField cannot replace a value of type {t}")


class MaskField(Side):
    """Masks ``fields`` (null values stay null)."""

    fields: ClassVar[Fields] = FIELDS

    def __init__(self, config: Config):
        """Read the fields and the replacement."""
        o = options(config, FIELDS)
        self.masked = list(dict.fromkeys(o["fields"]))
        self.replacement = o["replacement"]
        self.replace_null = o["replace.null.with.default"]
        self._plans: dict[int, tuple[Schema, dict[str, Any], Any]] = {}

    def _plan(self, schema: Schema) -> tuple[dict[str, Any], Any]:
        """The masked value of each field present, and the default filler, per input schema."""
        found = self._plans.get(id(schema))
        if found is not None and found[0] is schema:
            return found[1], found[2]
        by_name = {f.name: f.schema for f in schema.fields}
        values = {}
        for name in self.masked:
            s = by_name.get(name)
            if s is None:
                continue
            values[name] = (replaced_value(s, self.replacement, name) if self.replacement is not None
                            else empty_value(s, name))
        fill = default_filler(schema) if self.replace_null else None
        self._plans[id(schema)] = (schema, values, fill)
        return values, fill

    def apply(self, record: ChangeRecord) -> ChangeRecord:
        """The record with its fields masked (a null key or value as it is)."""
        schema, value = self.operating(record)
        if value is None:
            return record
        if schema is None:
            out = dict(value)
            for name in self.masked:
                if out.get(name) is not None:
                    v = out[name]
                    out[name] = self.replacement if self.replacement is not None else (
                        False if isinstance(v, bool) else 0 if isinstance(v, int) else 0.0 if isinstance(v, float)
                        else "" if isinstance(v, str) else [] if isinstance(v, list) else {})
            return self.replace(record, None, out)
        values, fill = self._plan(schema)
        out = dict(fill(value) if fill is not None else value)
        for name, masked in values.items():
            if out.get(name) is not None:
                out[name] = masked
        return self.replace(record, schema, out)


MaskFieldKey, MaskFieldValue = variants(MaskField, "MaskField")
