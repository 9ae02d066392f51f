"""``org.apache.kafka.connect.transforms.TimestampConverter$Key`` / ``$Value``: timestamps between types.

As Kafka 3.9: the input type comes from the schema (Connect's Timestamp, Date and Time logical types,
a string parsed with ``format``, an int64 read as Unix time in ``unix.precision``), the output is
``target.type`` (string, unix, Date, Time, Timestamp), all in UTC, through milliseconds.
``format`` is Java's ``SimpleDateFormat`` pattern (letters y M d H h m s S a E; quoted text).
"""

from __future__ import annotations

import calendar
import re
from typing import Any, ClassVar

from cdc_core.config import Config, Fields
from cdc_core.errors import ConfigError
from cdc_core.events import ChangeRecord
from cdc_core.schema import Field, Schema
from cdc_core.transforms.options import field, options
from cdc_core.transforms.sides import Side, variants
from cdc_core.transforms.structs import default_filler
from cdc_core.transforms.timestamp_router import java_date_format

TIMESTAMP, DATE, TIME = ("org.apache.kafka.connect.data.Timestamp", "org.apache.kafka.connect.data.Date",
                         "org.apache.kafka.connect.data.Time")
_DAY_MS = 86_400_000
#: Milliseconds per unit of ``unix.precision`` as a fraction (numerator, denominator).
_PRECISION = {"seconds": (1000, 1), "milliseconds": (1, 1), "microseconds": (1, 1000), "nanoseconds": (1, 1_000_000)}
_TYPES = {"string": "string", "unix": "unix", "date": "Date", "time": "Time", "timestamp": "Timestamp"}
FIELDS = Fields([
    field("field", "string", ""),
    field("target.type", "enum", None, required=True, allowed=("string", "unix", "date", "time", "timestamp")),
    field("format", "string", ""),
    field("unix.precision", "enum", "milliseconds", allowed=tuple(_PRECISION)),
    field("replace.null.with.default", "boolean", True),
])
_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name}
_PARSE = re.compile(r"'([^']*)'|([A-Za-z])\2*|[^A-Za-z']+")


def _truncate(n: int, d: int) -> int:
    """Java's integer division (toward zero)."""
    q = abs(n) // abs(d)
    return q if (n >= 0) == (d > 0) else -q


def java_date_parser(pattern: str):
    """A function reading text written in ``pattern`` (``SimpleDateFormat.parse``, UTC) into epoch milliseconds."""
    parts: list[tuple[str, Any]] = []
    for m in _PARSE.finditer(pattern):
        if m.group(1) is not None:
            parts.append(("lit", m.group(1) or "'"))
        elif m.group(2) is not None:
            if m.group(2) not in "yMdHhmsSaE":
                raise ValueError(f"the date format letter {m.group(2)!r} is not supported")
            parts.append((m.group(2), len(m.group(0))))
        else:
            parts.append(("lit", m.group(0)))
    regex, fields = "", []
    for i, (kind, n) in enumerate(parts):
        if kind == "lit":
            regex += re.escape(n)
            continue
        numeric_next = i + 1 < len(parts) and parts[i + 1][0] not in ("lit", "a", "E")
        if kind == "M" and n >= 3 or kind in "aE":
            regex += r"([A-Za-z]+)"
        elif numeric_next:
            regex += rf"(\d{{{n}}})"
        else:
            regex += r"(-?\d+)"
        fields.append(kind)
    compiled = re.compile(regex)

    def parse(text: str) -> int:
        m = compiled.match(text)
        if m is None:
            raise ValueError(f"could not parse timestamp: value ({text}) does not match pattern ({pattern})")
        v = {"y": 1970, "M": 1, "d": 1, "H": 0, "h": None, "m": 0, "s": 0, "S": 0, "a": None}
        for kind, raw in zip(fields, m.groups()):
            if kind == "M" and not raw.isdigit():
                v["M"] = _MONTHS[raw[:3].lower()]
            elif kind == "a":
                v["a"] = raw.upper()
            elif kind != "E":
                v[kind] = int(raw)
        hour = v["H"]
        if v["h"] is not None:
            hour = v["h"] % 12 + (12 if v["a"] == "PM" else 0)
        days = calendar.timegm((v["y"], 1, 1, 0, 0, 0)) // 86400
        month_days = sum(calendar.monthrange(v["y"], mm)[1] for mm in range(1, v["M"])) if 1 <= v["M"] <= 12 else 0
        days += month_days + v["d"] - 1
        return ((days * 24 + hour) * 60 + v["m"]) * 60_000 + v["s"] * 1000 + v["S"]

    return parse


class TimestampConverter(Side):
    """Converts a timestamp field (``field``) or the whole key/value to ``target.type``."""

    fields: ClassVar[Fields] = FIELDS

    def __init__(self, config: Config):
        """Read the options; ``format`` is required for string timestamps and must be a pattern cdc can read."""
        o = options(config, FIELDS)
        self.field = o["field"]
        self.target = _TYPES[o["target.type"]]
        pattern = o["format"] or ""
        if self.target == "string" and not pattern.strip():
            raise ConfigError(["format: TimestampConverter needs a format for string timestamps"])
        try:
            self.format = java_date_format(pattern) if pattern.strip() else None
            self.parse = java_date_parser(pattern) if pattern.strip() else None
        except ValueError as e:
            raise ConfigError([f"format: {e}"]) from None
        self.precision = _PRECISION[o["unix.precision"]]
        self.replace_null = o["replace.null.with.default"]
        self._plans: dict[int, tuple[Schema, Schema, str | None, Any]] = {}

    def _type_schema(self, optional: bool) -> Schema:
        """The schema of ``target.type``."""
        t = self.target
        if t == "string":
            return Schema("string", optional=optional)
        if t == "unix":
            return Schema("int64", optional=optional)
        name = {"Date": DATE, "Time": TIME, "Timestamp": TIMESTAMP}[t]
        return Schema("int64" if t == "Timestamp" else "int32", optional=optional, name=name, version=1)

    @staticmethod
    def _input_type(schema: Schema) -> str:
        """The timestamp type a schema holds (ValueError if none)."""
        names = {TIMESTAMP: "Timestamp", DATE: "Date", TIME: "Time"}
        if schema.name in names:
            return names[schema.name]
        if schema.type == "string":
            return "string"
        if schema.type == "int64":
            return "unix"
        raise ValueError(f"schema {schema.name or schema.type} does not correspond to a known timestamp type format")

    def _to_ms(self, value: Any, kind: str) -> int:
        """The input value in epoch milliseconds."""
        if kind == "string":
            if self.parse is None:
                raise ValueError("a string timestamp needs the format option")
            return self.parse(value)
        if kind == "unix":
            num, den = self.precision
            return value * num if den == 1 else _truncate(value, den)
        if kind == "Date":
            return value * _DAY_MS
        return value  # Time (ms of the day) and Timestamp (ms)

    def convert(self, value: Any, kind: str) -> Any:
        """``value`` (of ``kind``) as ``target.type``."""
        if value is None:
            return None
        ms = self._to_ms(value, kind)
        t = self.target
        if t == "string":
            return self.format(ms)  # type: ignore[misc]
        if t == "unix":
            num, den = self.precision
            return _truncate(ms, num) if den == 1 else ms * den
        if t == "Date":
            return ms // _DAY_MS
        if t == "Time":
            return ms % _DAY_MS
        return ms

    def _plan(self, schema: Schema) -> tuple[Schema, str | None, Any]:
        """The converted struct schema, the field's input type and the default filler, per input schema."""
        found = self._plans.get(id(schema))
        if found is not None and found[0] is schema:
            return found[1], found[2], found[3]
        fields, kind = [], None
        for f in schema.fields:
            if f.name == self.field:
                kind = self._input_type(f.schema)
                fields.append(Field(f.name, self._type_schema(f.schema.optional)))
            else:
                fields.append(f)
        out = Schema("struct", optional=schema.optional, name=schema.name, version=schema.version, doc=schema.doc,
                     parameters=schema.parameters, fields=tuple(fields))
        fill = default_filler(schema) if self.replace_null else None
        self._plans[id(schema)] = (schema, out, kind, fill)
        return out, kind, fill

    def apply(self, record: ChangeRecord) -> ChangeRecord:
        """The record with its timestamp converted."""
        schema, value = self.operating(record)
        if schema is None:
            if value is None or not self.field:
                return self.replace(record, None, None if value is None else self.convert(value, _infer(value)))
            out = dict(value)
            v = out.get(self.field)
            out[self.field] = None if v is None else self.convert(v, _infer(v))
            return self.replace(record, None, out)
        if not self.field:
            return self.replace(record, self._type_schema(schema.optional), self.convert(value, self._input_type(schema)))
        new, kind, fill = self._plan(schema)
        if value is None:
            return self.replace(record, new, None)
        row = dict(fill(value) if fill is not None else value)
        if kind is not None:
            row[self.field] = self.convert(row.get(self.field), kind)
        return self.replace(record, new, row)


def _infer(value: Any) -> str:
    """The timestamp type of a schemaless value (a number is Unix time, a string is formatted)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return "unix"
    if isinstance(value, str):
        return "string"
    raise ValueError(f"TimestampConverter cannot read a {type(value).__name__} without a schema")


TimestampConverterKey, TimestampConverterValue = variants(TimestampConverter, "TimestampConverter")
