"""``org.apache.kafka.connect.transforms.ReplaceField$Key`` / ``$Value``: keep, drop and rename fields."""

from __future__ import annotations

from typing import Any, ClassVar

from cdc_core.config import Config, Fields
from cdc_core.errors import ConfigError
from cdc_core.events import ChangeRecord
from cdc_core.schema import Field, Schema
from cdc_core.transforms.options import field, options
from cdc_core.transforms.schemas import basics
from cdc_core.transforms.sides import Side, variants
from cdc_core.transforms.structs import default_filler

FIELDS = Fields([
    field("exclude", "list", []), field("blacklist", "list", None),
    field("include", "list", []), field("whitelist", "list", None),
    field("renames", "list", []),
    field("replace.null.with.default", "boolean", True),
])


class ReplaceField(Side):
    """Filters (``include``/``exclude``; the older ``whitelist``/``blacklist``) and renames (``renames=a:b``) fields."""

    fields: ClassVar[Fields] = FIELDS

    def __init__(self, config: Config):
        """Read the field lists (the older names where the newer are unset) and the renames."""
        o = options(config, FIELDS)
        exclude = o["exclude"] if config.get("exclude") not in (None, "") or o["blacklist"] is None else o["blacklist"]
        include = o["include"] if config.get("include") not in (None, "") or o["whitelist"] is None else o["whitelist"]
        self.exclude, self.include = frozenset(exclude), frozenset(include)
        self.renames: dict[str, str] = {}
        for mapping in o["renames"]:
            parts = mapping.split(":")
            if len(parts) != 2:
                raise ConfigError([f"renames: invalid rename mapping {mapping!r} (expected old:new)"])
            self.renames[parts[0]] = parts[1]
        self.replace_null = o["replace.null.with.default"]
        self._schemas: dict[int, tuple[Schema, Schema, list[tuple[str, str]], Any]] = {}

    def _keep(self, name: str) -> bool:
        """Whether a field stays."""
        return name not in self.exclude and (not self.include or name in self.include)

    def _plan(self, schema: Schema) -> tuple[Schema, list[tuple[str, str]], Any]:
        """The new schema, the (old, new) names and the default filler, per input schema."""
        found = self._schemas.get(id(schema))
        if found is not None and found[0] is schema:
            return found[1], found[2], found[3]
        pairs = [(f.name, self.renames.get(f.name, f.name)) for f in schema.fields if self._keep(f.name)]
        by_name = {f.name: f for f in schema.fields}
        out = basics(schema, [Field(new, by_name[old].schema) for old, new in pairs])
        fill = default_filler(schema) if self.replace_null else None
        self._schemas[id(schema)] = (schema, out, pairs, fill)
        return out, pairs, fill

    def apply(self, record: ChangeRecord) -> ChangeRecord:
        """The record with the fields filtered and renamed (a null key or value as it is)."""
        schema, value = self.operating(record)
        if value is None:
            return record
        if schema is None:
            if not isinstance(value, dict):
                raise ValueError(f"ReplaceField needs a map or struct, got {type(value).__name__}")
            return self.replace(record, None, {self.renames.get(k, k): v for k, v in value.items() if self._keep(k)})
        out, pairs, fill = self._plan(schema)
        if fill is not None:
            value = fill(value)
        return self.replace(record, out, {new: value.get(old) for old, new in pairs})


ReplaceFieldKey, ReplaceFieldValue = variants(ReplaceField, "ReplaceField")
