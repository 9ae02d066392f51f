"""Column defaults in the Connect schema, as 2.7.4's SqlServerDefaultValueConverter parses ``sys.default_constraints``.

SQL Server keeps a DEFAULT as text: ``((0))``, ``((1.5))``, ``('abc')``, ``(N'abc')``, ``(0x0102)``,
``(getdate())``. Debezium parses it per type with plain index arithmetic, no T-SQL parser, and converts it
with the column's converter; a text its parsing throws on gives no default, with a warning. cdc follows
that arithmetic to the character (cdc_sqlserver.java_text), including where it gives what the server
never stores:

- numbers (tinyint/smallint/int/bigint/float/real; nullableDefaultValueMapper): the text between the
  last ``(`` and the first ``)`` (``(-(1))`` gives 1, ``((1)+(2))`` throws), ``NULL`` in any case no
  default, then Java's parseInt/parseShort/parseLong (with their ranges; bigint drops one trailing ``.``)
  or parseDouble/parseFloat;
- strings (char/varchar/text/nchar/nvarchar/ntext; nullableStringDefaultValueMapper): the text between
  the first and the last ``'``, then the number rule's parentheses, then ``NULL`` (any case) is no
  default. Quotes are never undoubled: ``('it''s')`` gives ``it''s``, ``('a(b)c')`` gives ``b``,
  ``('NULL')`` no default, ``(N'abc')`` ``abc``, ``('')`` the empty string, and a function without a
  quote, ``(newid())`` or ``(suser_sname())``, the empty string (the text between ``newid(`` and ``)``);
- decimal/numeric/money/smallmoney: ``new BigDecimal`` of the text without two characters at each end
  (``((-1.5))`` gives -1.5, ``(-(1.5))`` throws), the column's scale added when it is larger;
- bit: true exactly for ``((1))`` (``(NULL)``, ``((2))``, ``(getdate())`` give false, a default);
- binary/varbinary/image: HexConverter of the text without ``(0x`` and ``)`` (an odd count of digits throws);
- date/time types: the text without two characters at each end goes to the server's ``SELECT PARSE(? AS
  <type>)`` (cdc_sqlserver.server_parse, the ``parse`` callable threaded from the connector's connection):
  ``('2019-02-03')`` gives ``2019-02-03``; ``(getdate())`` gives ``etdate(``, ``(N'2019-02-03')``
  ``'2019-02-03``, which the server refuses: a warning, no default.

Other types (uniqueidentifier, xml, sql_variant, geometry, ...) have no mapper: a warning, no default. The
mapper is looked up by the type's name as getColumns gives it (Debezium's typeName), so an alias type
(``CREATE TYPE Flag FROM bit``) has none either.
Source: debezium-connector-sqlserver/.../SqlServerDefaultValueConverter.java (v2.7.4.Final); the cases are
data in tests/data/sqlserver_defaults.yaml (``definitions``).

Where cdc does not follow: under decimal.handling.mode=precise, a decimal default with more digits after the
point than the column's scale (``numeric(10,2) DEFAULT 1.005``) is no default here, with a warning; 2.7.4
sets the BigDecimal as the schema's default and Kafka's Decimal.fromLogical then refuses it when a converter
serializes the schema (DataException, "mismatching scale"), failing every event of the table (string and
double modes give ``1.005`` in both). A lost connection while PARSEing
a temporal default is raised (2.7.4 logs it as an unparseable default and goes on without one).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from cdc_core.schema import Schema
from cdc_sqlserver import java_text as jt
from cdc_sqlserver.driver_errors import is_connection_error
from cdc_sqlserver.server_parse import TEMPORAL_TYPES
from cdc_sqlserver.types import zoned

_log = logging.getLogger("cdc_sqlserver.defaults")
_NULL = object()


def _innermost(v: str) -> str:
    """nullableDefaultValueMapper's cut: from after the last ``(`` to the first ``)`` (Java's substring: throws
    when the ``)`` comes first)."""
    start = v.rfind("(") + 1
    end = v.find(")") if ")" in v else len(v)
    return jt.substring(v, start, end)


def _nullable(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """nullableDefaultValueMapper: the innermost text, ``NULL`` (any case) no default, else ``parse`` of it."""
    def mapper(v: str) -> Any:
        text = _innermost(v)
        return _NULL if jt.equals_ignore_case(text, "NULL") else parse(text)
    return mapper


def _string(v: str) -> Any:
    """nullableStringDefaultValueMapper: between the first and the last ``'`` (no undoubling), then as a number's text."""
    start = v.find("'") + 1
    end = v.rfind("'") if "'" in v else len(v)
    return _nullable(str)(jt.substring(v, start, end))


def _bigint(text: str) -> int:
    """Long.parseLong, without one trailing ``.`` (SQL Server writes ``((3147483648.))``)."""
    return jt.parse_long(jt.substring(text, 0, len(text) - 1) if jt.char_at(text, len(text) - 1) == "." else text)


def _big_decimal(v: str) -> Decimal:
    """``new BigDecimal(v.substring(2, v.length() - 2))``."""
    return jt.big_decimal(jt.substring(v, 2, len(v) - 2))


def _hex(v: str) -> bytes:
    """``HexConverter.convertFromHex(v.substring(3, v.length() - 1))``."""
    return jt.from_hex(jt.substring(v, 3, len(v) - 1))


_MAPPERS: dict[str, Callable[[str], Any]] = {
    "bigint": _nullable(_bigint),
    "int": _nullable(jt.parse_int), "smallint": _nullable(jt.parse_short), "tinyint": _nullable(jt.parse_short),
    "bit": lambda v: v == "((1))",
    "decimal": _big_decimal, "numeric": _big_decimal, "money": _big_decimal, "smallmoney": _big_decimal,
    "float": _nullable(jt.parse_double), "real": _nullable(jt.parse_float),
    "char": _string, "varchar": _string, "text": _string, "nchar": _string, "nvarchar": _string, "ntext": _string,
    "binary": _hex, "varbinary": _hex, "image": _hex,
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
        raw = parse(type_name, jt.substring(definition, 2, len(definition) - 2)) if temporal else mapper(definition)  # type: ignore[misc]
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
