"""The custom converter contract (Debezium's CustomConverter): replace a column's schema and conversion."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple, Protocol, runtime_checkable

from cdc_core.relational import Column, TableId
from cdc_core.schema import Schema


class Conversion(NamedTuple):
    """What a converter registers for a column: its new Connect schema and value function.

    ``convert`` receives the connector's raw value (for PostgreSQL, the value's text form; never
    None) and returns the JSON-ready value for ``schema``.
    """

    schema: Schema
    convert: Callable[[Any], Any]


@runtime_checkable
class CustomConverter(Protocol):
    """A converter named in ``converters=<name>``, configured by ``<name>.type`` and ``<name>.<param>``.

    cdc asks it once per column of every captured table version; returning None leaves the
    column as it is. A converter that raises is reported with its name and the column.
    """

    #: The value of ``<name>.type`` that selects this converter (its class path works too).
    name: ClassVar[str]

    def configure(self, props: dict[str, str]) -> None:
        """Receive the ``<name>.*`` properties (prefix removed, ``type`` included)."""

    def converter_for(self, column: Column, table: TableId) -> Conversion | None:
        """The conversion for ``column`` of ``table``, or None to leave it alone."""
