"""Debezium's Filter SMT: keeps the records for which ``condition`` is true, drops the others."""

from __future__ import annotations

from typing import Any, ClassVar

from cdc_core.events import ChangeRecord
from cdc_core.expressions.values import describe
from cdc_core.transforms.scripting import ScriptingTransform


class Filter(ScriptingTransform):
    """``io.debezium.transforms.Filter``: ``condition`` must give a boolean (true keeps the record).

    A null or non-boolean result stops the engine, as in Debezium (where a null fails on unboxing).
    """

    name: ClassVar[str] = "filter"
    class_names: ClassVar[tuple[str, ...]] = ("io.debezium.transforms.Filter",)
    expression_property: ClassVar[str] = "condition"

    def use(self, record: ChangeRecord, result: Any) -> ChangeRecord | None:
        """The record if the condition is true, None if false."""
        if result is True:
            return record
        if result is False:
            return None
        raise self.failure(record, f"the condition gave {describe(result)}, not a boolean")
