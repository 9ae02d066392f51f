"""``org.apache.kafka.connect.transforms.TimestampRouter``: the topic with the record's date in it.

cdc's records have no Kafka timestamp before a sink writes them (Kafka's transform fails on
Debezium's source records for that reason): the event's ``ts_ms`` is used, else the current time.
"""

from __future__ import annotations

import datetime
import re
from typing import ClassVar

from cdc_core.config import Config, Fields
from cdc_core.errors import ConfigError
from cdc_core.events import ChangeRecord
from cdc_core.transforms.insert_field import record_timestamp
from cdc_core.transforms.options import field, options
from cdc_core.transforms.sides import KAFKA

FIELDS = Fields([field("topic.format", "string", "${topic}-${timestamp}"),
                 field("timestamp.format", "string", "yyyyMMdd")])

_LETTERS = re.compile(r"'([^']*)'|([A-Za-z])\2*|[^A-Za-z']+")


def java_date_format(pattern: str):
    """A function formatting UTC epoch milliseconds as Java's ``SimpleDateFormat(pattern)`` does
    (letters y M d H h m s S a E; quoted text literal). ValueError for letters it does not know."""
    parts = []
    for m in _LETTERS.finditer(pattern):
        text = m.group(0)
        if m.group(1) is not None:
            parts.append(("lit", m.group(1) or "'"))
        elif m.group(2) is not None:
            letter, n = m.group(2), len(text)
            if letter not in "yMdHhmsSaE":
                raise ValueError(f"the date format letter {letter!r} is not supported")
            parts.append((letter, n))
        else:
            parts.append(("lit", text))

    def fmt(ms: int) -> str:
        """``ms`` formatted with the pattern."""
        t = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
        out = []
        for kind, n in parts:
            if kind == "lit":
                out.append(n)
            elif kind == "y":
                out.append(f"{t.year % 100:02d}" if n == 2 else f"{t.year:0{n}d}")
            elif kind == "M":
                out.append(t.strftime("%B") if n >= 4 else t.strftime("%b") if n == 3 else f"{t.month:0{n}d}")
            elif kind == "d":
                out.append(f"{t.day:0{n}d}")
            elif kind == "H":
                out.append(f"{t.hour:0{n}d}")
            elif kind == "h":
                out.append(f"{(t.hour % 12) or 12:0{n}d}")
            elif kind == "m":
                out.append(f"{t.minute:0{n}d}")
            elif kind == "s":
                out.append(f"{t.second:0{n}d}")
            elif kind == "S":
                out.append(f"{ms % 1000:0{n}d}")
            elif kind == "a":
                out.append("AM" if t.hour < 12 else "PM")
            elif kind == "E":
                out.append(t.strftime("%A") if n >= 4 else t.strftime("%a"))
        return "".join(out)

    return fmt


class TimestampRouter:
    """Routes to ``topic.format`` with ``${topic}`` and ``${timestamp}`` (formatted per ``timestamp.format``, UTC)."""

    name: ClassVar[str] = "TimestampRouter"
    class_names: ClassVar[tuple[str, ...]] = (f"{KAFKA}TimestampRouter",)
    fields: ClassVar[Fields] = FIELDS

    def __init__(self, config: Config):
        """Read the topic format and compile the date format."""
        o = options(config, FIELDS)
        self.topic_format = o["topic.format"]
        try:
            self.format = java_date_format(o["timestamp.format"])
        except ValueError as e:
            raise ConfigError([f"timestamp.format: {e}"]) from None

    def apply(self, record: ChangeRecord) -> ChangeRecord:
        """The record on its dated topic."""
        stamp = self.format(record_timestamp(record))
        record.topic = self.topic_format.replace("${topic}", record.topic).replace("${timestamp}", stamp)
        return record
