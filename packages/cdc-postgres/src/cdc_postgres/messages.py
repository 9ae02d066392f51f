"""Logical decoding messages (``pg_logical_emit_message``) as ``op: m`` events on ``<topic.prefix>.message``."""

from __future__ import annotations

import base64
import re
import time
from typing import Any

from cdc_core.events import ChangeRecord
from cdc_core.schema import OPTIONAL_BYTES, OPTIONAL_INT64, OPTIONAL_STRING, STRING, struct
from cdc_postgres.source import SOURCE_SCHEMA

KEY_SCHEMA = struct("io.debezium.connector.postgresql.MessageKey", [("prefix", OPTIONAL_STRING)])
MESSAGE_BLOCK = struct(
    "io.debezium.connector.postgresql.Message", [("prefix", OPTIONAL_STRING), ("content", OPTIONAL_BYTES)], optional=True
)
# Field order as the chapter prints the payload: source, op, ts_ms, ts_us, ts_ns, message.
VALUE_SCHEMA = struct(
    "io.debezium.connector.postgresql.MessageValue",
    [
        ("source", SOURCE_SCHEMA),
        ("op", STRING),
        ("ts_ms", OPTIONAL_INT64),
        ("ts_us", OPTIONAL_INT64),
        ("ts_ns", OPTIONAL_INT64),
        ("message", MESSAGE_BLOCK),
    ],
)


class MessageFilter:
    """``message.prefix.include.list`` / ``message.prefix.exclude.list`` (anchored regexes)."""

    def __init__(self, include: list[re.Pattern[str]] | None, exclude: list[re.Pattern[str]] | None):
        self.include = include or []
        self.exclude = exclude or []

    def includes(self, prefix: str) -> bool:
        """True if messages with ``prefix`` are emitted."""
        if self.include:
            return any(p.fullmatch(prefix) for p in self.include)
        return not any(p.fullmatch(prefix) for p in self.exclude)


def message_record(topic: str, prefix: str, content: bytes, source: dict[str, Any], offset: dict[str, Any]) -> ChangeRecord:
    """The ``op: m`` record of one message; the key is the message prefix."""
    now = time.time_ns()
    value = {
        "source": source,
        "op": "m",
        "ts_ms": now // 1_000_000,
        "ts_us": now // 1_000,
        "ts_ns": now,
        "message": {"prefix": prefix, "content": base64.b64encode(content).decode()},
    }
    return ChangeRecord(topic, {"prefix": prefix}, value, KEY_SCHEMA, VALUE_SCHEMA, offset)
