"""Logical decoding messages (``pg_logical_emit_message``) as ``op: m`` events on ``<topic.prefix>.message``."""

from __future__ import annotations

import re
import time
from functools import cache
from typing import Any

from cdc_core.events import ChangeRecord
from cdc_core.schema import OPTIONAL_INT64, OPTIONAL_STRING, STRING, Schema, struct
from cdc_core.semantic import binary_schema, bytes_encoder
from cdc_postgres.source import SOURCE_SCHEMA

# As PostgresSchemaFactory (2.7.4) builds them: each struct at version 1, the message block
# required, its content following binary.handling.mode; no ts_us/ts_ns in the value.
KEY_SCHEMA = struct("io.debezium.connector.postgresql.MessageKey", [("prefix", OPTIONAL_STRING)], version=1)


@cache
def value_schema(binary_mode: str) -> Schema:
    """The message value schema under ``binary.handling.mode``: fields op, ts_ms, source, message."""
    block = struct("io.debezium.connector.postgresql.Message",
                   [("prefix", OPTIONAL_STRING), ("content", binary_schema(binary_mode, optional=True))], version=1)
    return struct(
        "io.debezium.connector.postgresql.MessageValue",
        [("op", STRING), ("ts_ms", OPTIONAL_INT64), ("source", SOURCE_SCHEMA), ("message", block)],
        version=1,
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


def message_record(topic: str, prefix: str, content: bytes, source: dict[str, Any], offset: dict[str, Any] | None,
                   binary_mode: str = "bytes") -> ChangeRecord:
    """The ``op: m`` record of one message; the key is the message prefix, ``ts_ms`` the time it is processed."""
    value = {
        "op": "m",
        "ts_ms": time.time_ns() // 1_000_000,
        "source": source,
        "message": {"prefix": prefix, "content": bytes_encoder(binary_mode)(content)},
    }
    return ChangeRecord(topic, {"prefix": prefix}, value, KEY_SCHEMA, value_schema(binary_mode), offset)
