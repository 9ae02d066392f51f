"""Kafka Connect's predicates: ``TopicNameMatches``, ``HasHeaderKey`` and ``RecordIsTombstone``."""

from __future__ import annotations

import re
from typing import ClassVar

from cdc_core.config import Config, Fields
from cdc_core.events import ChangeRecord
from cdc_core.transforms.options import options, regex, required

PREDICATES = "org.apache.kafka.connect.transforms.predicates."


class TopicNameMatches:
    """True for a record whose whole topic name matches ``pattern``."""

    name: ClassVar[str] = "TopicNameMatches"
    class_names: ClassVar[tuple[str, ...]] = (f"{PREDICATES}TopicNameMatches",)
    fields: ClassVar[Fields] = Fields([regex("pattern")])

    def __init__(self, config: Config):
        """Compile the pattern."""
        self.pattern = re.compile(options(config, self.fields)["pattern"])
        self._seen: dict[str, bool] = {}

    def test(self, record: ChangeRecord) -> bool:
        """Whether the record's topic matches (answers cached per topic)."""
        topic = record.topic
        found = self._seen.get(topic)
        if found is None:
            if len(self._seen) > 10_000:
                self._seen.clear()
            found = self._seen[topic] = self.pattern.fullmatch(topic) is not None
        return found


class HasHeaderKey:
    """True for a record with at least one header called ``name``."""

    name: ClassVar[str] = "HasHeaderKey"
    class_names: ClassVar[tuple[str, ...]] = (f"{PREDICATES}HasHeaderKey",)
    fields: ClassVar[Fields] = Fields([required("name")])

    def __init__(self, config: Config):
        """Read the header name."""
        self.header = options(config, self.fields)["name"]

    def test(self, record: ChangeRecord) -> bool:
        """Whether the header is present."""
        return self.header in record.headers


class RecordIsTombstone:
    """True for a tombstone (a record whose value is null)."""

    name: ClassVar[str] = "RecordIsTombstone"
    class_names: ClassVar[tuple[str, ...]] = (f"{PREDICATES}RecordIsTombstone",)
    fields: ClassVar[Fields] = Fields([])

    def __init__(self, config: Config):
        """Check that no option is given (there is none)."""
        options(config, self.fields)

    def test(self, record: ChangeRecord) -> bool:
        """Whether the value is null."""
        return record.value is None
