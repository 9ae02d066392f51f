"""``io.debezium.transforms.ExtractNewRecordState``: the change event's ``after`` row as the record's value.

Behaviour as Debezium 3.0.7's (``ExtractNewRecordState`` with its delete-handling strategies):
tombstones and DELETE events are handled per ``delete.tombstone.handling.mode`` (or the deprecated
``drop.tombstones`` + ``delete.handling.mode`` when it is unset), TRUNCATE events are dropped,
records that are not change events (no ``*.Envelope`` value schema: heartbeats, schema changes,
transaction metadata, messages) pass unchanged. ``add.fields`` / ``add.headers`` copy envelope,
``source`` and ``transaction`` fields; a field the envelope schema does not have is not added.
The flattened value schema is the table's ``Value`` schema made required, as Kafka's
``SchemaUtil.copySchemaBasics`` leaves it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from cdc_core.config import Config, Fields
from cdc_core.errors import ConfigError
from cdc_core.events import ChangeRecord
from cdc_core.schema import Field, Schema
from cdc_core.transforms.options import field, options
from cdc_core.transforms.schemas import as_optional, basics
from cdc_core.transforms.structs import default_filler, exclude_fields

DELETED_FIELD = "__deleted"
_OPTIONAL_STRING = Schema("string", optional=True)
_TRANSACTION_FIELDS = frozenset({"id", "total_order", "data_collection_order"})
_TOP_LEVEL_FIELDS = frozenset({"op", "ts_ms", "ts_us", "ts_ns"})

FIELDS = Fields([
    field("drop.tombstones", "boolean", True),
    field("delete.handling.mode", "enum", "drop", allowed=("drop", "rewrite", "none")),
    field("delete.tombstone.handling.mode", "enum", None,
          allowed=("drop", "tombstone", "rewrite", "rewrite-with-tombstone", "delete-to-tombstone")),
    field("route.by.field", "string", ""),
    field("add.fields.prefix", "string", "__"),
    field("add.fields", "list", []),
    field("add.headers.prefix", "string", "__"),
    field("add.headers", "list", []),
    field("drop.fields.header.name", "string", None),
    field("drop.fields.from.key", "boolean", False),
    field("drop.fields.keep.schema.compatible", "boolean", True),
    field("replace.null.with.default", "boolean", True),
])

#: ``delete.tombstone.handling.mode`` -> (what a DELETE becomes, tombstones kept, c/u/r get ``__deleted``).
#: A DELETE becomes: None (dropped), "null" (the ``after`` field: null value, its schema), "rewrite"
#: (``before`` plus ``__deleted: "true"``) or "tombstone" (null value and schema; Debezium 3.1's mode).
_MODES = {
    "drop": (None, False, False),
    "tombstone": ("null", False, False),
    "rewrite": ("rewrite", False, True),
    "rewrite-with-tombstone": ("rewrite", True, True),
    "delete-to-tombstone": ("tombstone", False, False),
}
_LEGACY = {"drop": None, "none": "null", "rewrite": "rewrite"}
_STRING = Schema("string")


class FieldReference:
    """One ``add.fields`` / ``add.headers`` entry: ``[struct.]field[:newName]`` and its output name."""

    __slots__ = ("struct", "field", "new_field")

    def __init__(self, prefix: str, spec: str):
        """Parse ``spec`` (``[struct.]field[:newName]``) with the output ``prefix``."""
        parts = spec.split(":")
        if len(parts) > 2:
            raise ValueError(f"unexpected field name {spec!r}")
        splits = parts[0].split(".")
        self.field = splits[0] if len(splits) == 1 else splits[1]
        self.struct = _struct_of(self.field) if len(splits) == 1 else splits[0]
        if len(parts) == 2:
            self.new_field = prefix + parts[1]
        else:
            self.new_field = prefix + (self.field if len(splits) == 1 else f"{self.struct}_{self.field}")

    def schema(self, envelope: Schema) -> Schema | None:
        """The added field's schema (optional, without default), or None if the envelope has no such field."""
        found = _field(envelope, self.field)
        if self.struct is not None:
            parent = _field(envelope, self.struct)
            inner = _field(parent.schema, self.field) if parent is not None else None
            if inner is not None:
                found = inner
        return as_optional(found.schema) if found is not None else None

    def value(self, envelope: dict[str, Any], envelope_schema: Schema) -> Any:
        """The field's value in an envelope payload (None where its struct is null)."""
        parent = envelope if self.struct is None else envelope.get(self.struct)
        if parent is None:
            return None
        if self.struct is not None:
            p = _field(envelope_schema, self.struct)
            if p is None or _field(p.schema, self.field) is None:
                return envelope.get(self.field)
        return parent.get(self.field)


def _struct_of(name: str) -> str | None:
    """The struct Debezium looks an unqualified field up in (None: the envelope itself)."""
    if name in _TRANSACTION_FIELDS:
        return "transaction"
    if name in _TOP_LEVEL_FIELDS:
        return None
    if name == "updateDescription":
        return "updateDescription"
    return "source"


def _field(schema: Schema | None, name: str) -> Field | None:
    """The field ``name`` of a struct schema, or None."""
    if schema is None or schema.type != "struct":
        return None
    for f in schema.fields:
        if f.name == name:
            return f
    return None


def _references(prefix: str, specs: list[str], option: str) -> list[FieldReference]:
    """The FieldReferences of an ``add.fields``/``add.headers`` list."""
    try:
        return [FieldReference(prefix, s) for s in specs]
    except ValueError as e:
        raise ConfigError([f"{option}: {e}"]) from None


class ExtractNewRecordState:
    """Flattens Debezium change events to their ``after`` row (Debezium's event flattening SMT)."""

    name: ClassVar[str] = "ExtractNewRecordState"
    class_names: ClassVar[tuple[str, ...]] = ("io.debezium.transforms.ExtractNewRecordState", "unwrap")
    fields: ClassVar[Fields] = FIELDS

    def __init__(self, config: Config):
        """Read and check every option; the deprecated pair applies only without delete.tombstone.handling.mode."""
        o = options(config, FIELDS)
        mode = o["delete.tombstone.handling.mode"]
        if mode:
            self.delete_action, self.keep_tombstones, self.rewrite = _MODES[mode]
        else:  # the deprecated pair
            self.delete_action = _LEGACY[o["delete.handling.mode"]]
            self.keep_tombstones = not o["drop.tombstones"]
            self.rewrite = o["delete.handling.mode"] == "rewrite"
        self.route_by_field = o["route.by.field"] or None
        self.add_fields = _references(o["add.fields.prefix"], o["add.fields"], "add.fields")
        self.add_headers = _references(o["add.headers.prefix"], o["add.headers"], "add.headers")
        self.drop_header = o["drop.fields.header.name"] or None
        self.drop_from_key = o["drop.fields.from.key"]
        self.drop_keep_compatible = o["drop.fields.keep.schema.compatible"]
        self.replace_null_with_default = o["replace.null.with.default"]
        # Derived schemas by the identity of the envelope schema (schemas are built once per table version).
        self._flat: dict[tuple[int, str], tuple[Schema, Schema, list[tuple[str, FieldReference]]]] = {}
        self._deleted: dict[int, tuple[Schema, Schema, Any]] = {}
        self._header_refs: dict[int, tuple[Schema, list[FieldReference], dict[str, Schema]]] = {}
        #: The last envelope schema and op seen, and their flattened schema (runs of one table are the rule).
        self._last: tuple[Any, Any, Any, Any] = (None, None, None, None)

    # -- schemas -------------------------------------------------------------------------------

    def _row_schema(self, envelope: Schema, side: str) -> Schema:
        """The schema of the envelope's ``before`` or ``after`` field."""
        f = _field(envelope, side)
        if f is None:
            raise ValueError(f"the envelope schema {envelope.name} has no {side!r} field")
        return f.schema

    def _flat_schema(self, envelope: Schema, op: str, rewritten: bool) -> tuple[Schema, list]:
        """The flattened value schema for one envelope schema and op, and the added fields present."""
        last = self._last
        if last[0] is envelope and last[1] == op:
            return last[2], last[3]
        key = (id(envelope), op)
        found = self._flat.get(key)
        if found is not None and found[0] is envelope:
            self._last = (envelope, op, found[1], found[2])
            return found[1], found[2]
        row = self._row_schema(envelope, "before" if op == "d" else "after")
        fields = list(row.fields)
        if rewritten:  # InsertField's __deleted, then addFields' own copy of the basics
            fields.append(Field(DELETED_FIELD, _OPTIONAL_STRING))
        present = []
        for ref in self.add_fields:
            s = ref.schema(envelope)
            if s is not None:
                fields.append(Field(ref.new_field, s))
                present.append(ref)
        out = basics(row, fields)
        self._flat[key] = (envelope, out, present)
        self._last = (envelope, op, out, present)
        return out, present

    def _headers(self, record: ChangeRecord, envelope: dict[str, Any] | None) -> None:
        """Add the ``add.headers`` headers with their field schemas (a tombstone gets only ``op``, as ``d``)."""
        headers = dict(record.headers)
        if envelope is None:
            schemas: dict[str, Schema | None] = {}
            for ref in self.add_headers:
                if ref.field == "op":
                    headers[ref.new_field] = "d"
                    schemas[ref.new_field] = _STRING  # Headers.addString
        else:
            vs = record.value_schema
            found = self._header_refs.get(id(vs))
            if found is None or found[0] is not vs:
                refs = [(r, r.schema(vs)) for r in self.add_headers]
                found = self._header_refs[id(vs)] = (vs, [r for r, s in refs if s is not None],
                                                     {r.new_field: s for r, s in refs if s is not None})
            for ref in found[1]:
                headers[ref.new_field] = ref.value(envelope, vs)
            schemas = found[2]
        record.headers = headers
        if schemas:
            record.set_header_schemas(schemas)

    # -- records -------------------------------------------------------------------------------

    def apply(self, record: ChangeRecord) -> ChangeRecord | None:
        """The flattened record, the record unchanged (not a change event), or None (dropped)."""
        value = record.value
        vs = record.value_schema
        if value is None:
            if self.add_headers:
                self._headers(record, None)
            return record if self.keep_tombstones else None
        name = vs.name if vs is not None else None
        if name is None or not name.endswith(".Envelope"):
            return record
        if self.add_headers:
            self._headers(record, value)
        after = value.get("after")
        if after is None:
            before = value.get("before")
            if before is None:  # a truncate
                return None
            return self._delete(record, value, vs, before)
        op = value.get("op")
        schema, present = self._flat_schema(vs, op, self.rewrite)
        row = after
        if self.rewrite:
            row = self._filled(vs, "after", row)
            row = {**row, DELETED_FIELD: "false"}
        if present:
            row = {**row, **{ref.new_field: ref.value(value, vs) for ref in present}}
        record.value = row
        record.value_schema = schema
        if self.route_by_field is not None:
            self._route(record, row)
        if self.drop_header is not None:
            self._drop_fields(record)
        return record

    def _filled(self, envelope: Schema, side: str, row: dict[str, Any]) -> dict[str, Any]:
        """``row`` with nulls replaced by their field defaults (InsertField's replace.null.with.default)."""
        if not self.replace_null_with_default:
            return row
        fill = default_filler(self._row_schema(envelope, side))
        return row if fill is None else fill(row)

    def _delete(self, record: ChangeRecord, value: dict[str, Any], vs: Schema, before: dict[str, Any]) -> ChangeRecord | None:
        """A DELETE event per the delete handling mode (None: dropped)."""
        action = self.delete_action
        if action is None:
            return None
        if action == "tombstone":
            record.value = None
            record.value_schema = None
            return record
        if action == "null":  # ExtractField of ``after``: a null value with the row schema
            record.value = None
            record.value_schema = self._row_schema(vs, "after")
            if self.route_by_field is not None:
                self._route(record, before)
            if self.drop_header is not None:
                self._drop_fields(record)
            return record
        schema, present = self._flat_schema(vs, "d", True)
        row = {**self._filled(vs, "before", before), DELETED_FIELD: "true"}
        record.value = row
        record.value_schema = schema
        if self.route_by_field is not None:
            self._route(record, before)
        if self.drop_header is not None:
            self._drop_fields(record)
            row = record.value
        if present and row is not None:
            record.value = {**row, **{ref.new_field: ref.value(value, vs) for ref in present}}
        return record

    def _route(self, record: ChangeRecord, row: dict[str, Any]) -> None:
        """Move the record to the topic named by the ``route.by.field`` value of ``row``."""
        topic = row.get(self.route_by_field)
        if topic is not None and str(topic).strip():
            record.topic = str(topic)

    def _drop_fields(self, record: ChangeRecord) -> None:
        """Remove the fields the ``drop.fields.header.name`` header lists (optional ones only, unless told)."""
        names = record.headers.get(self.drop_header)  # type: ignore[arg-type]
        if not names:
            return
        names = list(names)
        if self.drop_from_key and record.key is not None and record.key_schema is not None:
            drop = self._droppable(record.key_schema, names)
            if drop:
                record.key, record.key_schema = exclude_fields(record.key, record.key_schema, drop)
        if record.value is not None and record.value_schema is not None:
            drop = self._droppable(record.value_schema, names)
            if drop:
                record.value, record.value_schema = exclude_fields(record.value, record.value_schema, drop)

    def _droppable(self, schema: Schema, names: list[str]) -> frozenset[str]:
        """The listed fields that may be dropped from ``schema``."""
        if not self.drop_keep_compatible:
            return frozenset(names)
        return frozenset(f.name for f in schema.fields if f.schema.optional and f.name in names)
