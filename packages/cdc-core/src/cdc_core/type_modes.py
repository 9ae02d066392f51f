"""The value-shaping properties every connector shares: decimal, time precision and binary handling modes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TypeModes:
    """The value-shaping properties: decimal.handling.mode, time.precision.mode, binary.handling.mode."""

    decimal_handling: str = "precise"
    time_precision: str = "adaptive"
    binary_handling: str = "bytes"

    @classmethod
    def from_config(cls, config: Any) -> TypeModes:
        """The modes a connector configuration sets (the common properties, Debezium's defaults)."""
        from cdc_core.config import common

        return cls(config.get(common.DECIMAL_MODE), config.get(common.TIME_PRECISION_MODE),
                   config.get(common.BINARY_MODE))
