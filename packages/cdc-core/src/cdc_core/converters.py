"""Loading the custom converters named by ``converters`` and applying them to columns."""

from __future__ import annotations

import importlib
from dataclasses import replace
from typing import Any

from cdc_core.config import Config
from cdc_core.errors import ConfigError, PluginError
from cdc_core.relational import Column, TableId
from cdc_core.spi.converter import CustomConverter


def converter_names(config: Config) -> list[str]:
    """The names listed in ``converters``."""
    raw = config.get("converters")
    return [n.strip() for n in str(raw).split(",") if n.strip()] if raw else []


def _load_class(type_name: str, plugins: Any) -> type:
    if plugins is not None:
        try:
            return plugins.get("converter", type_name)
        except PluginError:
            pass
    module, _, attr = type_name.replace(":", ".").rpartition(".")
    if not module:
        raise PluginError(f"no converter called {type_name!r}")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise PluginError(f"cannot load converter class {type_name!r}: {e}") from None


class CustomConverters:
    """The configured converters, in the order ``converters`` lists them; the first that claims a column wins."""

    def __init__(self, config: Config, plugins: Any = None):
        self.converters: list[tuple[str, CustomConverter]] = []
        problems = []
        for name in converter_names(config):
            props = {k: str(v) for k, v in config.subset(name).items()}
            type_name = props.get("type")
            if not type_name:
                problems.append(f"{name}.type: is required for converter {name!r} listed in converters")
                continue
            try:
                instance = _load_class(type_name, plugins)()
                instance.configure(props)
            except Exception as e:  # a broken converter is a configuration problem, named
                problems.append(f"{name}.type: converter {type_name!r} failed to load: {e}")
                continue
            self.converters.append((name, instance))
        if problems:
            raise ConfigError(problems)

    def __bool__(self) -> bool:
        return bool(self.converters)

    def apply(self, table: TableId, column: Column) -> Column:
        """The column with the first claiming converter's schema and conversion."""
        for name, converter in self.converters:
            try:
                conversion = converter.converter_for(column, table)
            except Exception as e:
                raise PluginError(f"converter {name!r} failed for column {table}.{column.name}: {e}") from e
            if conversion is not None:
                schema = conversion.schema.with_optional(column.optional)
                default = _converted_default(column, conversion)
                doc = column.schema.doc if column.schema is not None else None
                if default is not None or doc is not None:  # TableSchemaBuilder sets both on the converter's schema
                    schema = replace(schema, default=default, doc=doc or schema.doc, _json=[])
                return replace(column, schema=schema, convert=conversion.convert)
        return column


def _converted_default(column: Column, conversion: Any) -> Any:
    """The column's default through the converter, as Debezium's TableSchemaBuilder sets it (None if none).

    A connector that knows its columns' defaults puts the raw value (what ``convert`` takes) in
    ``column.extra["raw_default"]``; ``DEFAULT 0`` of a TINYINT(1) through a boolean converter is ``false``.
    """
    raw = column.extra.get("raw_default")
    if raw is None:
        return None
    try:
        return conversion.convert(raw)
    except Exception:  # a default the converter cannot take: Debezium fails the table; the schema has no default
        return None
