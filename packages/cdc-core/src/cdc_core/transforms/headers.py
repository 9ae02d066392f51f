"""``org.apache.kafka.connect.transforms.DropHeaders`` and ``InsertHeader``: removing and adding headers."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, ClassVar

from cdc_core.config import Config, Fields
from cdc_core.events import ChangeRecord
from cdc_core.schema import Schema
from cdc_core.transforms.options import field, options, required
from cdc_core.transforms.sides import KAFKA

_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def literal(text: str) -> Any:
    """A header value from its text, as Kafka's ``Values.parseString`` reads the common cases: true/false,
    integers and decimal numbers; anything else stays a string."""
    return typed_literal(text)[1]


def typed_literal(text: str) -> tuple[Schema, Any]:
    """The Connect schema and value of a literal, as ``Values.parseString``: BOOLEAN, the smallest of
    INT8..INT64 for a whole number (``1.0`` and ``1e3`` too), FLOAT32 for other decimal numbers, else STRING."""
    stripped = text.strip()
    if stripped in ("true", "false"):  # case-sensitive: Kafka keeps "FALSE" a string
        return Schema("boolean"), stripped == "true"
    if _NUMBER.fullmatch(stripped):
        exact = Decimal(stripped)
        if exact == exact.to_integral_value() and -(2**63) <= int(exact) < 2**63:
            number = int(exact)
            for bits, name in ((8, "int8"), (16, "int16"), (32, "int32"), (64, "int64")):
                if -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
                    return Schema(name), number
        if exact != exact.to_integral_value():
            number = float(stripped)
            if abs(number) <= _FLOAT32_MAX:
                return Schema("float32"), number
            if number not in (float("inf"), float("-inf")):
                return Schema("float64"), number
    # Kafka makes a Decimal of a number beyond int64 / float64; cdc keeps its text.
    return Schema("string"), text


_FLOAT32_MAX = 3.4028234663852886e38


class DropHeaders:
    """Removes the headers named in ``headers``."""

    name: ClassVar[str] = "DropHeaders"
    class_names: ClassVar[tuple[str, ...]] = (f"{KAFKA}DropHeaders",)
    fields: ClassVar[Fields] = Fields([field("headers", "list", None, required=True, allow_blank=False)])

    def __init__(self, config: Config):
        """Read the header names."""
        self.names = frozenset(options(config, self.fields)["headers"])

    def apply(self, record: ChangeRecord) -> ChangeRecord:
        """The record without those headers."""
        if record.headers and not self.names.isdisjoint(record.headers):
            record.headers = {k: v for k, v in record.headers.items() if k not in self.names}
        return record


class InsertHeader:
    """Adds the header ``header`` with the value ``value.literal``."""

    name: ClassVar[str] = "InsertHeader"
    class_names: ClassVar[tuple[str, ...]] = (f"{KAFKA}InsertHeader",)
    fields: ClassVar[Fields] = Fields([required("header"), field("value.literal", "string", None, required=True)])

    def __init__(self, config: Config):
        """Read the header and its value."""
        o = options(config, self.fields)
        self.header = o["header"]
        self.schema, self.value = typed_literal(o["value.literal"])
        self._schemas = {self.header: self.schema}

    def apply(self, record: ChangeRecord) -> ChangeRecord:
        """The record with the header added (and its schema: the literal's, as ``Values.parseString``)."""
        record.headers = {**record.headers, self.header: self.value}
        record.set_header_schemas(self._schemas)
        return record
