"""Compiled row converters: one generated function per table version turns raw values into a struct."""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from typing import Any

from cdc_core.events import UNAVAILABLE
from cdc_core.relational import Column


def _placeholder_for(column: Column, placeholder: str) -> Any:
    if column.schema.type == "string":
        return placeholder
    if column.schema.type == "bytes":
        return base64.b64encode(placeholder.encode()).decode()
    return None


#: Debezium's fallback for a NULL in a non-optional column (JdbcValueConverters): the type's zero.
_ZERO_BY_TYPE = {"int8": 0, "int16": 0, "int32": 0, "int64": 0, "float32": 0.0, "float64": 0.0,
                 "boolean": False, "string": "", "bytes": ""}
_ZERO_BY_NAME = {"org.apache.kafka.connect.data.Decimal": "AA==",
                 "io.debezium.data.VariableScaleDecimal": {"scale": 0, "value": "AA=="}}


def fallback_value(column: Column) -> Any:
    """What Debezium writes for a NULL in a non-optional column: its default, else the type's zero.

    This happens where the log omits values, e.g. the non-key columns of a REPLICA IDENTITY
    DEFAULT delete.
    """
    schema = column.schema
    if schema.default is not None:
        return schema.default
    if schema.name in _ZERO_BY_NAME:
        return _ZERO_BY_NAME[schema.name]
    return _ZERO_BY_TYPE.get(schema.type)


def compile_row_function(
    columns: list[tuple[int, Column]], with_unavailable: bool, placeholder: str = "__debezium_unavailable_value"
) -> Callable[[Sequence[Any]], dict]:
    """Generate ``row(values) -> dict`` for the given (raw index, column) pairs.

    The generated code reads each raw value once, turns None into None (or the fallback of a
    non-optional column), and calls the column's converter otherwise; ``with_unavailable`` adds the placeholder for unchanged TOASTed values.
    """
    env: dict[str, Any] = {"U": UNAVAILABLE}
    lines = ["def row(v):"]
    items = []
    for n, (index, column) in enumerate(columns):
        env[f"c{n}"] = column.convert
        env[f"p{n}"] = _placeholder_for(column, placeholder)
        env[f"f{n}"] = None if column.schema.optional else fallback_value(column)
        lines.append(f"    x{n} = v[{index}]")
        expr = f"f{n} if x{n} is None else c{n}(x{n})"
        if with_unavailable:
            expr = f"p{n} if x{n} is U else ({expr})"
        items.append(f"{column.name!r}: {expr}")
    lines.append("    return {" + ", ".join(items) + "}")
    exec(compile("\n".join(lines), "<cdc row converter>", "exec"), env)
    return env["row"]
