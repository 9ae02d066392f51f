"""Debezium's ContentBasedRouter SMT: the record's topic becomes the value of ``topic.expression``."""

from __future__ import annotations

from typing import Any, ClassVar

from cdc_core.events import ChangeRecord
from cdc_core.expressions.values import describe
from cdc_core.transforms.scripting import ScriptingTransform


class ContentBasedRouter(ScriptingTransform):
    """``io.debezium.transforms.ContentBasedRouter``: a string result is the new topic, null keeps the topic.

    Any other result stops the engine, as in Debezium ("is not a String").
    """

    name: ClassVar[str] = "content_router"
    class_names: ClassVar[tuple[str, ...]] = ("io.debezium.transforms.ContentBasedRouter",)
    expression_property: ClassVar[str] = "topic.expression"

    def use(self, record: ChangeRecord, result: Any) -> ChangeRecord | None:
        """The record on the topic the expression names (the same record for null)."""
        if result is None:
            return record
        if type(result) is not str:
            raise self.failure(record, f"the expression gave {describe(result)}, not a string (a topic name)")
        if not result:
            raise self.failure(record, "the expression gave an empty topic name")
        return ChangeRecord(result, record.key, record.value, record.key_schema, record.value_schema, record.offset,
                            record.headers, record.partition, record.header_schemas)
