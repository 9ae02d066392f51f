"""``org.apache.kafka.connect.transforms.RegexRouter``: a new topic from the old one, by regular expression."""

from __future__ import annotations

from typing import ClassVar

from cdc_core.config import Config, Fields
from cdc_core.errors import ConfigError
from cdc_core.events import ChangeRecord
from cdc_core.transforms.java_regex import java_pattern, java_replacement, replace_first
from cdc_core.transforms.options import field, options, regex
from cdc_core.transforms.sides import KAFKA

FIELDS = Fields([regex("regex"), field("replacement", "string", None, required=True)])


class RegexRouter:
    """Routes a record whose topic fully matches ``regex`` to ``replacement`` (``$1`` etc. name groups)."""

    name: ClassVar[str] = "RegexRouter"
    class_names: ClassVar[tuple[str, ...]] = (f"{KAFKA}RegexRouter",)
    fields: ClassVar[Fields] = FIELDS

    def __init__(self, config: Config):
        """Compile the expression and the replacement."""
        o = options(config, FIELDS)
        self.regex = java_pattern(o["regex"])
        try:
            self.replacement = java_replacement(o["replacement"], self.regex)
        except ValueError as e:
            raise ConfigError([f"replacement: {e}"]) from None
        self._topics: dict[str, str | None] = {}

    def apply(self, record: ChangeRecord) -> ChangeRecord:
        """The record, on its new topic if its topic matched."""
        topic = record.topic
        try:
            new = self._topics[topic]
        except KeyError:
            new = replace_first(self.regex, self.replacement, topic)
            if len(self._topics) > 10_000:
                self._topics.clear()
            self._topics[topic] = new
        if new is not None:
            record.topic = new
        return record
