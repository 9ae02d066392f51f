"""Compiled row converters: one generated function per table version turns raw values into a struct."""

from __future__ import annotations

import base64
import operator
from collections.abc import Callable, Sequence
from itertools import repeat
from typing import Any

from cdc_core.events import UNAVAILABLE
from cdc_core.relational import Column


def _placeholder_for(column: Column, placeholder: str) -> Any:
    """The value written for an unavailable (unchanged TOASTed) value of ``column``.

    A connector may give its own per column, for the schema it made it for, in
    ``column.extra["unavailable"]`` = (schema type, schema name, value); else the placeholder
    text for strings, its bytes for bytes, and null for the rest.
    """
    own = column.extra.get("unavailable")
    if own is not None and own[0] == column.schema.type and own[1] == column.schema.name:
        return own[2]
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


def null_value(column: Column) -> Any:
    """What a SQL NULL of ``column`` is written as: a mapper's own (``column.mask.with`` masks NULLs
    too, as Debezium's MaskingValueConverter ignores its input), else null where the field is
    optional, else ``fallback_value``."""
    if "null_value" in column.extra:
        return column.extra["null_value"]
    return None if column.schema.optional else fallback_value(column)


#: ``on_failure(column, raw, error)``: the value of an optional column whose converter failed (or raise).
FailureHandler = Callable[[Column, Any, Exception], Any]


def _tolerant_row(columns: list[tuple[int, Column]], with_unavailable: bool, placeholder: str,
                  on_failure: FailureHandler) -> Callable[[Sequence[Any]], dict]:
    """The slow path of a row function: column by column, a failed conversion of an optional column goes to ``on_failure``."""
    specs = [(index, column, column.convert, _placeholder_for(column, placeholder),
              null_value(column)) for index, column in columns]

    def row(v: Sequence[Any]) -> dict:
        out = {}
        for index, column, convert, unavailable, fallback in specs:
            x = v[index]
            if with_unavailable and x is UNAVAILABLE:
                out[column.name] = unavailable
            elif x is None:
                out[column.name] = fallback
            else:
                try:
                    out[column.name] = convert(x)
                except Exception as e:  # noqa: BLE001  # any converter failure, as Debezium's TableSchemaBuilder
                    if not column.schema.optional:
                        raise  # a null would break the required field (Debezium: DataException)
                    out[column.name] = on_failure(column, x, e)
        return out

    return row


def compile_row_function(
    columns: list[tuple[int, Column]], with_unavailable: bool, placeholder: str = "__debezium_unavailable_value",
    on_failure: FailureHandler | None = None,
) -> Callable[[Sequence[Any]], dict]:
    """Generate ``row(values) -> dict`` for the given (raw index, column) pairs.

    The generated code reads each raw value once, turns None into None (or the fallback of a
    non-optional column), and calls the column's converter otherwise; ``with_unavailable`` adds the placeholder for unchanged TOASTed values.
    With ``on_failure``, a row whose conversion raises is converted again column by column, and
    an optional column whose converter fails gets ``on_failure(column, raw, error)`` (Debezium's
    ``event.converting.failure.handling.mode``); rows that convert cleanly pay nothing for it.
    """
    env: dict[str, Any] = {"U": UNAVAILABLE}
    body = []
    items = []
    for n, (index, column) in enumerate(columns):
        env[f"c{n}"] = column.convert
        env[f"p{n}"] = _placeholder_for(column, placeholder)
        env[f"f{n}"] = null_value(column)
        body.append(f"x{n} = v[{index}]")
        expr = f"f{n} if x{n} is None else c{n}(x{n})"
        if with_unavailable:
            expr = f"p{n} if x{n} is U else ({expr})"
        items.append(f"{column.name!r}: {expr}")
    body.append("return {" + ", ".join(items) + "}")
    if on_failure is None:
        lines = ["def row(v):", *("    " + line for line in body)]
    else:
        env["SLOW"] = _tolerant_row(columns, with_unavailable, placeholder, on_failure)
        lines = ["def row(v):", "    try:", *("        " + line for line in body),
                 "    except Exception:", "        return SLOW(v)"]
    exec(compile("\n".join(lines), "<cdc row converter>", "exec"), env)
    return env["row"]


def compile_batch_function(
    columns: list[tuple[int, Column]], key_columns: list[tuple[int, Column]] | None
) -> Callable[[Sequence[Sequence[Any]]], tuple[list[dict], list[dict] | None]]:
    """Generate ``rows(raw_rows) -> (values, keys)``: ``compile_row_function``'s results for many rows.

    Column by column: the rows are transposed once and each column converted with ``map`` (or a
    comprehension when it holds NULLs), then the dicts are built in one comprehension. A key
    column that is also a value column reuses the value's conversion. ``keys`` is None without
    key columns. Rows must not carry ``UNAVAILABLE`` (inserts and snapshot reads never do).
    """
    # NULLs are found by identity (``_any(_map(_is, x, NONES))``): ``None in x`` calls ``==``, which for a
    # Decimal is an ABC instance check per value.
    env: dict[str, Any] = {"_map": map, "_list": list, "_zip": zip, "_any": any, "_is": operator.is_,
                           "NONES": repeat(None)}
    lines = ["def rows(vs):", "    if not vs:", "        return [], ([] if HAS_KEY else None)", "    cols = _list(_zip(*vs))"]
    converted: dict[tuple[int, int], str] = {}  # (raw index, id(column)) -> local name of its converted list

    def convert(index: int, column: Column) -> str:
        found = converted.get((index, id(column)))
        if found is not None:
            return found
        n = len(converted)
        env[f"c{n}"] = column.convert
        env[f"f{n}"] = null_value(column)
        lines.append(f"    x = cols[{index}]")
        lines.append(f"    a{n} = [f{n} if y is None else c{n}(y) for y in x] if _any(_map(_is, x, NONES)) else _list(_map(c{n}, x))")
        converted[(index, id(column))] = f"a{n}"
        return f"a{n}"

    def comprehension(cols: list[tuple[int, Column]]) -> str:
        if not cols:
            return "[{} for _ in vs]"
        names = [convert(index, column) for index, column in cols]
        targets = ", ".join(f"y{n}" for n in range(len(cols)))
        items = ", ".join(f"{column.name!r}: y{n}" for n, (_, column) in enumerate(cols))
        if len(cols) == 1:
            return f"[{{{items}}} for y0 in {names[0]}]"
        return f"[{{{items}}} for {targets} in _zip({', '.join(names)})]"

    values = comprehension(columns)
    keys = comprehension(key_columns) if key_columns else "None"
    env["HAS_KEY"] = bool(key_columns)
    lines.append(f"    return {values}, {keys}")
    exec(compile("\n".join(lines), "<cdc batch row converter>", "exec"), env)
    return env["rows"]


#: Raw value types whose equal values always convert to equal key fields (not floats: -0.0 == 0.0;
#: not Decimals: 1.0 == 1.00; not bool, which equals 0 and 1).
_EXACT_TYPES = frozenset({str, int, bytes})


def compile_old_key_function(
    key: Callable[[Sequence[Any]], dict], positions: Sequence[int]
) -> Callable[[Sequence[Any], Sequence[Any], dict], dict]:
    """Generate ``old_key(before, after, new_key) -> dict``: the key of an update's old row.

    ``new_key`` (``key(after)``) when the old row lacks a key column (the old key is not known:
    REPLICA IDENTITY on another index carries that index's columns only) or carries the very raw
    key values of the new row (str, int or bytes values that are equal convert to the same key);
    else ``key(before)``.
    """
    lines = ["def old_key(b, a, k):"]
    same = []
    for n, i in enumerate(positions):
        lines += [f"    b{n} = b[{i}]", f"    if b{n} is None:", "        return k", f"    a{n} = a[{i}]"]
        same.append(f"(b{n} == a{n} and b{n}.__class__ is a{n}.__class__ and b{n}.__class__ in EXACT)")
    lines.append(f"    return k if {' and '.join(same)} else KEY(b)")
    env: dict[str, Any] = {"KEY": key, "EXACT": _EXACT_TYPES}
    exec(compile("\n".join(lines), "<cdc old key>", "exec"), env)
    return env["old_key"]


#: Schema types whose converted values are immutable (str, int, float, bool), so a before and an
#: after row may share one; structs, arrays and maps are dicts and lists, each row gets its own.
_SHAREABLE_TYPES = frozenset({"int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string", "bytes"})


def compile_pair_function(
    columns: list[tuple[int, Column]], row: Callable[[Sequence[Any]], dict],
    placeholder: str = "__debezium_unavailable_value",
) -> Callable[[Sequence[Any], Sequence[Any]], tuple[dict, dict]]:
    """Generate ``pair(before, after) -> (row(before), row(after))`` for an update's two images.

    ``row`` is ``compile_row_function(columns, with_unavailable=True, ...)``. A column whose raw
    value is the same in both images (equal str, int or bytes values, as in ``compile_old_key_function``)
    is converted once, where its converter is not a plain type call (``int``, ``str``: cheaper than
    the test) and its values are immutable. Converters are taken to be deterministic. If anything
    raises, both rows are converted again by ``row`` (before first), with its failure handling.
    """
    env: dict[str, Any] = {"U": UNAVAILABLE, "EXACT": _EXACT_TYPES, "ROW": row}
    body = []
    before_items, after_items = [], []
    for n, (index, column) in enumerate(columns):
        env[f"c{n}"] = column.convert
        env[f"p{n}"] = _placeholder_for(column, placeholder)
        env[f"f{n}"] = null_value(column)
        body.append(f"x{n} = a[{index}]")
        body.append(f"y{n} = b[{index}]")
        body.append(f"ax{n} = p{n} if x{n} is U else (f{n} if x{n} is None else c{n}(x{n}))")
        convert_before = f"p{n} if y{n} is U else (f{n} if y{n} is None else c{n}(y{n}))"
        if column.schema.type in _SHAREABLE_TYPES and not isinstance(column.convert, type):
            convert_before = (f"ax{n} if (y{n} == x{n} and y{n}.__class__ in EXACT and y{n}.__class__ is x{n}.__class__)"
                              f" else ({convert_before})")
        body.append(f"bx{n} = {convert_before}")
        before_items.append(f"{column.name!r}: bx{n}")
        after_items.append(f"{column.name!r}: ax{n}")
    body.append("return {" + ", ".join(before_items) + "}, {" + ", ".join(after_items) + "}")
    lines = ["def pair(b, a):", "    try:", *("        " + line for line in body),
             "    except Exception:", "        return ROW(b), ROW(a)"]
    exec(compile("\n".join(lines), "<cdc update pair converter>", "exec"), env)
    return env["pair"]
