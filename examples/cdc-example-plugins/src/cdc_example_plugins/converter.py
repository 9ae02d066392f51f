"""A custom converter: boolean columns written as words (``yes``/``no`` by default) instead of true/false.

Configure it with::

    converters=words
    words.type=boolean-words
    words.true=yes
    words.false=no
    words.selector=public\\.orders\\..*
"""

from __future__ import annotations

import re
from typing import ClassVar

from cdc_core.relational import Column, TableId
from cdc_core.schema import Schema
from cdc_core.spi.converter import Conversion


class BooleanWordsConverter:
    """Turns boolean columns (optionally only those matching ``selector``) into strings."""

    name: ClassVar[str] = "boolean-words"

    def configure(self, props: dict[str, str]) -> None:
        """Read ``true``, ``false`` and ``selector`` (a regex over ``schema.table.column``)."""
        self.true = props.get("true", "yes")
        self.false = props.get("false", "no")
        selector = props.get("selector")
        self.selector = re.compile(selector) if selector else None

    def converter_for(self, column: Column, table: TableId) -> Conversion | None:
        """Claim boolean columns; the raw value is PostgreSQL's text form ``t``/``f``."""
        if column.type_name not in ("bool", "boolean"):
            return None
        if self.selector and not self.selector.fullmatch(f"{table.identifier}.{column.name}"):
            return None
        words = {"t": self.true, "f": self.false, "true": self.true, "false": self.false}
        return Conversion(Schema("string", optional=column.optional, name="io.example.BooleanWord"), words.__getitem__)
