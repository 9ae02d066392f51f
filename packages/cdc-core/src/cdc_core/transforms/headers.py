"""``org.apache.kafka.connect.transforms.DropHeaders`` and ``InsertHeader``: removing and adding headers."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from cdc_core.config import Config, Fields
from cdc_core.events import ChangeRecord
from cdc_core.transforms.options import field, options, required
from cdc_core.transforms.sides import KAFKA

_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def literal(text: str) -> Any:
    """A header value from its text, as Kafka's ``Values.parseString`` reads the common cases: true/false,
    integers and decimal numbers; anything else stays a string."""
    stripped = text.strip()
    if stripped.lower() in ("true", "false"):
        return stripped.lower() == "true"
    if _INTEGER.fullmatch(stripped) and -(2**63) <= int(stripped) < 2**63:
        return int(stripped)
    if _NUMBER.fullmatch(stripped):
        return float(stripped)
    return text


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
        self.value = literal(o["value.literal"])

    def apply(self, record: ChangeRecord) -> ChangeRecord:
        """The record with the header added."""
        record.headers = {**record.headers, self.header: self.value}
        return record
