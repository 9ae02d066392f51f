"""The connector properties that shape PostgreSQL values, read once into ``TypeModes``."""

from __future__ import annotations

from cdc_core.config import Config, common
from cdc_core.errors import ConfigError
from cdc_postgres import config as pgc
from cdc_postgres.types import TypeModes

__all__ = ["type_modes", "unavailable_placeholder"]


def unavailable_placeholder(config: Config) -> bytes:
    """``unavailable.value.placeholder`` as bytes: ``hex:`` then hexadecimal octets, else the text's bytes.

    As Debezium's PostgresConnectorConfig.getUnavailableValuePlaceholder (the text's UTF-8 bytes).
    """
    text = config.get(common.UNAVAILABLE_PLACEHOLDER)
    if not text.startswith("hex:"):
        return text.encode("utf-8")
    try:
        return bytes.fromhex(text[4:])
    except ValueError:
        raise ConfigError([f"{common.UNAVAILABLE_PLACEHOLDER.name}: {text!r} starts with 'hex:' but the rest is not "
                           "hexadecimal octets (pairs of 0-9, a-f); e.g. hex:5f5f756e617661696c61626c65"]) from None


def type_modes(config: Config) -> TypeModes:
    """The value-mapping modes the connector properties ask for (one place for the connector, snapshots and chunks)."""
    return TypeModes(
        decimal_handling=config.get(common.DECIMAL_MODE),
        binary_handling=config.get(common.BINARY_MODE),
        time_precision=config.get(common.TIME_PRECISION_MODE),
        interval_handling=config.get(pgc.INTERVAL_MODE),
        money_fraction_digits=config.get(pgc.MONEY_FRACTION_DIGITS),
        hstore_handling=config.get(pgc.HSTORE_MODE),
        include_unknown_datatypes=config.get(pgc.INCLUDE_UNKNOWN_DATATYPES),
        unavailable_placeholder=unavailable_placeholder(config),
    )
