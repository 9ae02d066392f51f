"""Column defaults in the Connect schema, as 2.7.4's SqlServerDefaultValueConverter parses ``sys.default_constraints``.

SQL Server keeps a DEFAULT as text: ``((0))``, ``((1.5))``, ``('abc')``, ``(N'abc')``, ``(0x0102)``,
``(getdate())``. Debezium parses it per type (numbers between the innermost parentheses, strings
between the outer quotes, binary from hex, temporal strings through ``SELECT PARSE(...)`` on the
server) and converts it with the column's converter; an expression it cannot parse (a function)
gives no default, with a warning. cdc does the same, parsing temporal strings locally (ISO forms,
which is what SQL Server stores for literals written in them). A ``NULL`` default is no default.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from cdc_core.schema import Schema

_log = logging.getLogger("cdc_sqlserver.defaults")
_NULL = object()


def _innermost(v: str) -> str:
    """nullableDefaultValueMapper: the text between the last ``(`` and the first ``)``."""
    start = v.rfind("(") + 1
    end = v.find(")") if ")" in v else len(v)
    return v[start:end]


def _quoted(v: str) -> str:
    """nullableStringDefaultValueMapper: between the first and the last single quote (then the parentheses)."""
    if "'" in v:
        return v[v.index("'") + 1:v.rindex("'")]
    return _innermost(v)


def _number(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def mapper(v: str) -> Any:
        text = _innermost(v)
        return _NULL if text.upper() == "NULL" else parse(text)
    return mapper


def _string(v: str) -> Any:
    text = _quoted(v)
    return _NULL if text.upper() == "NULL" and "'" not in v else text.replace("''", "'")


def _temporal(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    return lambda v: parse(v[2:-2])


_MAPPERS: dict[str, Callable[[str], Any]] = {
    "bigint": _number(lambda t: int(t[:-1] if t.endswith(".") else t)),
    "int": _number(int), "smallint": _number(int), "tinyint": _number(int),
    "bit": lambda v: v == "((1))",
    "decimal": lambda v: Decimal(v[2:-2]), "numeric": lambda v: Decimal(v[2:-2]),
    "money": lambda v: Decimal(v[2:-2]), "smallmoney": lambda v: Decimal(v[2:-2]),
    "float": _number(float), "real": _number(float),
    "char": _string, "varchar": _string, "text": _string, "nchar": _string, "nvarchar": _string, "ntext": _string,
    "binary": lambda v: bytes.fromhex(v[3:-1]), "varbinary": lambda v: bytes.fromhex(v[3:-1]),
    "image": lambda v: bytes.fromhex(v[3:-1]),
    "date": _temporal(date.fromisoformat), "datetime": _temporal(datetime.fromisoformat),
    "datetime2": _temporal(datetime.fromisoformat), "smalldatetime": _temporal(datetime.fromisoformat),
    "time": _temporal(lambda t: datetime.fromisoformat(t).time() if " " in t or "T" in t else
                      datetime.fromisoformat("1970-01-01 " + t).time()),
    "datetimeoffset": lambda v: v[2:-2],
}


def default_value(type_name: str, definition: str | None, convert: Callable[[Any], Any]) -> Any:
    """The JSON value of a column's default (None: no default in the schema)."""
    if definition is None:
        return None
    mapper = _MAPPERS.get(type_name)
    if mapper is None:
        _log.warning("Mapper for type '%s' not found.", type_name)
        return None
    try:
        raw = mapper(definition)
        if raw is _NULL or raw is None:
            return None
        return convert(raw)
    except Exception:  # noqa: BLE001 - as Debezium: an expression is not evaluated, the schema has no default
        _log.warning("Cannot parse column default value '%s' to type '%s'. Expression evaluation is not supported.",
                     definition, type_name)
        return None


def with_default(schema: Schema | None, convert: Callable[[Any], Any], info: Any) -> Schema | None:
    """``schema`` with the column's DEFAULT as its ``default`` (the same schema when there is none)."""
    if schema is None or info.default is None:
        return schema
    value = default_value(info.type_name, info.default, convert)
    if value is None:
        return schema
    return Schema(type=schema.type, optional=schema.optional, name=schema.name, version=schema.version,
                  doc=schema.doc, parameters=schema.parameters, default=value, fields=schema.fields,
                  items=schema.items, keys=schema.keys, values=schema.values)
