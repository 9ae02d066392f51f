"""The ``$Key`` / ``$Value`` variants of Kafka Connect's transforms: which part of a record they change."""

from __future__ import annotations

from typing import Any, ClassVar

from cdc_core.events import ChangeRecord
from cdc_core.schema import Schema

KAFKA = "org.apache.kafka.connect.transforms."


class Side:
    """Mixin: ``operating`` reads and ``replace`` writes the key (``on_key``) or the value of a record."""

    on_key: ClassVar[bool] = False

    def operating(self, record: ChangeRecord) -> tuple[Schema | None, Any]:
        """The schema and payload the transform works on."""
        if self.on_key:
            return record.key_schema, record.key
        return record.value_schema, record.value

    def replace(self, record: ChangeRecord, schema: Schema | None, payload: Any) -> ChangeRecord:
        """The record with the key or value (and its schema) replaced, changed in place."""
        if self.on_key:
            record.key_schema, record.key = schema, payload
        else:
            record.value_schema, record.value = schema, payload
        return record


def variants(base: type, simple: str) -> tuple[type, type]:
    """The ``<simple>$Key`` and ``<simple>$Value`` classes of a Kafka transform implemented by ``base``."""
    key = type(f"{base.__name__}Key", (base,), {
        "__doc__": f"{base.__doc__.splitlines()[0]} (on the key).",
        "on_key": True, "name": f"{simple}$Key", "class_names": (f"{KAFKA}{simple}$Key",),
        "__module__": base.__module__})
    value = type(f"{base.__name__}Value", (base,), {
        "__doc__": f"{base.__doc__.splitlines()[0]} (on the value).",
        "on_key": False, "name": f"{simple}$Value", "class_names": (f"{KAFKA}{simple}$Value",),
        "__module__": base.__module__})
    return key, value
