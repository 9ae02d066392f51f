"""Column defaults in the Connect schema, as 2.7.4's SqlServerDefaultValueConverter parses ``sys.default_constraints``.

SQL Server keeps a DEFAULT as text: ``((0))``, ``((1.5))``, ``('abc')``, ``(N'abc')``, ``(0x0102)``,
``(getdate())``. Debezium parses it per type (numbers between the innermost parentheses, strings
between the outer quotes, binary from hex, temporal strings through ``SELECT PARSE(...)`` on the
server) and converts it with the column's converter; an expression it cannot parse (a function)
gives no default, with a warning. cdc does the same: the temporal texts go to the server's PARSE
(cdc_sqlserver.server_parse, the ``parse`` callable threaded from the connector's connection), the
others are parsed here as Debezium parses them. A ``NULL`` default is no default.

Debezium strips a temporal default as ``v.substring(2, v.length() - 2)``: ``('2019-02-03')`` gives
``2019-02-03``, and ``(getdate())`` gives ``etdate(``, which the server refuses: a warning, no default.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from cdc_core.schema import Schema
from cdc_sqlserver.driver_errors import is_connection_error
from cdc_sqlserver.server_parse import TEMPORAL_TYPES
from cdc_sqlserver.types import zoned

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
}




def default_value(type_name: str, definition: str | None, convert: Callable[[Any], Any],
                  parse: Callable[[str, str], Any] | None) -> Any:
    """The JSON value of a column's default (None: no default in the schema).

    ``parse(type_name, text)``: the server's PARSE of a temporal text (cdc_sqlserver.server_parse); None
    when no connection can be asked, and then a temporal default is left out, with a warning.
    """
    if definition is None:
        return None
    temporal = type_name in TEMPORAL_TYPES
    mapper = _MAPPERS.get(type_name)
    if mapper is None and not temporal:
        _log.warning("Mapper for type '%s' not found.", type_name)
        return None
    if temporal and parse is None:
        _log.warning("Cannot parse column default value '%s' to type '%s': no connection to the server to PARSE it.",
                     definition, type_name)
        return None
    try:
        raw = parse(type_name, definition[2:-2]) if temporal else mapper(definition)  # type: ignore[misc]
        if raw is _NULL or raw is None:
            return None
        return zoned(raw) if type_name == "datetimeoffset" else convert(raw)
    except Exception as e:  # noqa: BLE001 - as Debezium: an expression is not evaluated, the schema has no default
        if is_connection_error(e):
            raise  # not an answer about the text (cdc_sqlserver.server_parse)
        _log.warning("Cannot parse column default value '%s' to type '%s'. Expression evaluation is not supported.",
                     definition, type_name)
        _log.debug("Parsing failed due to error: %s", e)
        return None


def with_default(schema: Schema | None, convert: Callable[[Any], Any], info: Any,
                 parse: Callable[[str, str], Any] | None) -> Schema | None:
    """``schema`` with the column's DEFAULT as its ``default`` (the same schema when there is none)."""
    if schema is None or info.default is None:
        return schema
    value = default_value(info.type_name, info.default, convert, parse)
    if value is None:
        return schema
    return Schema(type=schema.type, optional=schema.optional, name=schema.name, version=schema.version,
                  doc=schema.doc, parameters=schema.parameters, default=value, fields=schema.fields,
                  items=schema.items, keys=schema.keys, values=schema.values)
