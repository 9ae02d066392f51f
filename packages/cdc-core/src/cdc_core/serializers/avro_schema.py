"""Kafka Connect schemas as Avro schemas, by the rules of Confluent's ``AvroData.fromConnectSchema``.

The mapping (read from Confluent's Apache-licensed AvroData, not copied):

* int8/int16 -> ``int`` with ``connect.type`` ``int8``/``int16``; int32 -> ``int``; int64 -> ``long``;
  float32 -> ``float``; float64 -> ``double``; boolean, string, bytes as themselves.
* ``org.apache.kafka.connect.data.Decimal`` -> ``bytes`` with ``logicalType: decimal``, ``scale`` from
  its parameter and ``precision`` from ``connect.decimal.precision`` (64 when absent); a scale that is
  negative or above the precision keeps only the legacy ``logicalType`` property.
  Connect ``Date`` -> ``int`` + ``date``, ``Time`` -> ``int`` + ``time-millis``, ``Timestamp`` ->
  ``long`` + ``timestamp-millis``. Debezium's own semantic types (``io.debezium.time.*``) stay plain
  ``int``/``long``/``string`` with their ``connect.name``.
* struct -> ``record`` named by its Connect name (last dot part = name, the rest = namespace);
  an unnamed struct is ``io.confluent.connect.avro.ConnectDefault``. A record defined once is
  referred to by its full name afterwards (``before`` and ``after`` share ``Value``).
* array -> ``array``; a map with non-optional string keys -> ``map``; any other map -> an array of
  ``io.confluent.connect.avro.MapEntry`` records ``{key, value}``.
* metadata (``connect.meta.data``, on by default): ``connect.doc``, ``connect.version``,
  ``connect.parameters``, ``connect.default`` and ``connect.name`` on every non-union schema.
* optional -> a union with ``null`` first, or second when the schema has a default (Avro's union
  default must match the first branch); a record field's ``default`` is its schema's default, or
  ``null`` for an optional field without one.

Avro names are ``[A-Za-z_][A-Za-z0-9_]*`` per dotted part: Debezium users get them from
``schema.name.adjustment.mode=avro`` / ``field.name.adjustment.mode=avro`` (or ``avro_unicode``); a
name that is not valid is refused here with the property that fixes it (Avro's own parser refuses
it too). ``scrub.invalid.names=true`` (AvroData's option) adjusts them here instead.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from cdc_core.errors import CdcError
from cdc_core.naming import field_adjuster, schema_adjuster
from cdc_core.schema import Schema

NAMESPACE = "io.confluent.connect.avro"
DEFAULT_NAME = "ConnectDefault"
MAP_ENTRY = "MapEntry"
DECIMAL = "org.apache.kafka.connect.data.Decimal"
DATE = "org.apache.kafka.connect.data.Date"
TIME = "org.apache.kafka.connect.data.Time"
TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"
PRECISION_PARAMETER = "connect.decimal.precision"
DEFAULT_PRECISION = 64

_PRIMITIVES = {"int8": "int", "int16": "int", "int32": "int", "int64": "long", "float32": "float",
               "float64": "double", "boolean": "boolean", "string": "string", "bytes": "bytes"}
_LOGICAL = {DATE: "date", TIME: "time-millis", TIMESTAMP: "timestamp-millis"}
_AVRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class AvroSchemaError(CdcError):
    """A Connect schema cannot be written as Avro (an invalid name, a type Avro cannot hold)."""


def split_name(full: str) -> tuple[str | None, str]:
    """``a.b.C`` -> (``a.b``, ``C``); a name without dots has no namespace."""
    namespace, _, name = full.rpartition(".")
    return (namespace or None), name


class AvroSchemaBuilder:
    """Builds the Avro schema (as a JSON-ready dict) of one top-level Connect schema.

    ``scrub`` is AvroData's ``scrub.invalid.names``; ``meta`` its ``connect.meta.data``.
    """

    def __init__(self, *, meta: bool = True, scrub: bool = False):
        self.meta = meta
        self.scrub = scrub
        self._schema_name = schema_adjuster("avro")
        self._field_name = field_adjuster("avro")
        #: Full names of records already written, and the Connect JSON each was written from.
        self._defined: dict[str, dict[str, Any]] = {}
        self._unnamed = 0

    def build(self, schema: Schema) -> Any:
        """The Avro schema of ``schema`` (a fresh builder per top-level schema)."""
        return self._convert(schema, None, top=True)

    # -- names ----------------------------------------------------------------------------------

    def _check_name(self, full: str) -> str:
        parts = full.split(".")
        if all(_AVRO_NAME.match(p) for p in parts):
            return full
        if self.scrub:
            return self._schema_name(full)
        raise AvroSchemaError(
            f"schema name {full!r} is not a valid Avro name; set schema.name.adjustment.mode=avro (or avro_unicode) "
            "on the connector, or scrub.invalid.names=true on the Avro converter")

    def _check_field(self, name: str, owner: str) -> str:
        if _AVRO_NAME.match(name):
            return name
        if self.scrub:
            return self._field_name(name)
        raise AvroSchemaError(
            f"field {name!r} of {owner} is not a valid Avro name; set field.name.adjustment.mode=avro (or avro_unicode) "
            "on the connector, or scrub.invalid.names=true on the Avro converter")

    # -- schemas --------------------------------------------------------------------------------

    def _convert(self, schema: Schema, enclosing: str | None, top: bool = False) -> Any:
        """The Avro schema of ``schema`` inside a record of namespace ``enclosing`` (optional -> union)."""
        base = self._base(schema, enclosing)
        if not schema.optional:
            return base
        if schema.default is not None:
            return [base, "null"]
        return ["null", base]

    def _base(self, schema: Schema, enclosing: str | None) -> Any:
        kind = schema.type
        if kind == "struct":
            return self._record(schema, enclosing)
        if kind == "array":
            assert schema.items is not None
            out: dict[str, Any] = {"type": "array", "items": self._convert(schema.items, enclosing)}
        elif kind == "map":
            assert schema.keys is not None and schema.values is not None
            if schema.keys.type == "string" and not schema.keys.optional:
                out = {"type": "map", "values": self._convert(schema.values, enclosing)}
            else:
                out = {"type": "array", "items": self._map_entry(schema, enclosing)}
        else:
            out = {"type": _PRIMITIVES[kind]}
            if schema.name == DECIMAL:
                params = schema.parameters or {}
                out["scale"] = int(params.get("scale", "0"))
                out["precision"] = int(params.get(PRECISION_PARAMETER, DEFAULT_PRECISION))
        self._metadata(out, schema)
        if kind in ("int8", "int16") and self.meta:
            out["connect.type"] = kind
        if schema.name == DECIMAL:
            scale, precision = out["scale"], out["precision"]
            if 0 <= scale <= precision or PRECISION_PARAMETER in (schema.parameters or {}):
                out["logicalType"] = "decimal"
        elif schema.name in _LOGICAL:
            out["logicalType"] = _LOGICAL[schema.name]
        if len(out) == 1:
            return out["type"]
        return out

    def _metadata(self, out: dict[str, Any], schema: Schema) -> None:
        """``connect.*`` properties, in AvroData's order."""
        if not self.meta:
            return
        if schema.doc is not None:
            out["connect.doc"] = schema.doc
        if schema.version is not None:
            out["connect.version"] = schema.version
        if schema.parameters:
            out["connect.parameters"] = dict(schema.parameters)
        if schema.default is not None:
            out["connect.default"] = avro_default(schema, schema.default)
        if schema.name is not None:
            out["connect.name"] = schema.name

    def _record(self, schema: Schema, enclosing: str | None) -> Any:
        if schema.name is None:
            self._unnamed += 1
            full = f"{NAMESPACE}.{DEFAULT_NAME}" + ("" if self._unnamed == 1 else str(self._unnamed))
        else:
            full = self._check_name(schema.name)
        connect_json = schema.with_optional(False).to_json()
        if full in self._defined:
            if self._defined[full] != connect_json:
                raise AvroSchemaError(f"two different schemas are both named {full!r}; Avro needs unique record names")
            return full
        self._defined[full] = connect_json
        namespace, name = split_name(full)
        out: dict[str, Any] = {"type": "record", "name": name}
        if namespace != enclosing:
            out["namespace"] = namespace or ""
        out["fields"] = [self._field(self._check_field(f.name, full), f.schema, namespace)
                         for f in schema.fields]
        self._metadata(out, schema)
        return out

    def _field(self, name: str, schema: Schema, namespace: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {"name": name, "type": self._convert(schema, namespace)}
        if schema.default is not None:
            out["default"] = avro_default(schema, schema.default)
        elif schema.optional:
            out["default"] = None
        return out

    def _map_entry(self, schema: Schema, enclosing: str | None) -> Any:
        if schema.name is None:
            full = f"{NAMESPACE}.{MAP_ENTRY}"
        else:
            full = self._check_name(schema.name)
        if full in self._defined:
            return full
        self._defined[full] = schema.to_json()
        namespace, name = split_name(full)
        assert schema.keys is not None and schema.values is not None
        out: dict[str, Any] = {"type": "record", "name": name}
        if namespace != enclosing:
            out["namespace"] = namespace or ""
        out["fields"] = [self._field("key", schema.keys, namespace), self._field("value", schema.values, namespace)]
        if schema.name is not None:
            out["connect.internal.type"] = MAP_ENTRY
        return out


def avro_default(schema: Schema, value: Any) -> Any:
    """A default value (in its JsonConverter JSON form) as Avro's JSON writes it: bytes as ISO-8859-1 text."""
    if value is None:
        return None
    kind = schema.type
    if kind == "bytes":  # JSON form: base64 (plain bytes and Decimal's unscaled bytes alike)
        return base64.b64decode(value).decode("latin-1")
    if kind == "struct":
        return {f.name: avro_default(f.schema, value.get(f.name)) for f in schema.fields}
    if kind == "array":
        assert schema.items is not None
        return [avro_default(schema.items, x) for x in value]
    if kind == "map":
        assert schema.keys is not None and schema.values is not None
        if isinstance(value, dict):
            return {k: avro_default(schema.values, v) for k, v in value.items()}
        return [[avro_default(schema.keys, k), avro_default(schema.values, v)] for k, v in value]
    return value


def avro_schema(schema: Schema, *, meta: bool = True, scrub: bool = False) -> Any:
    """The Avro schema (JSON-ready) of a top-level Connect schema."""
    return AvroSchemaBuilder(meta=meta, scrub=scrub).build(schema)
