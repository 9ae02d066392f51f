"""Column defaults in the Connect schema, as 2.7.4's Db2DefaultValueConverter parses ``SYSCAT.COLUMNS.DEFAULT``.

Db2 keeps a DEFAULT as text: a constant (``5``, ``1.5``, ``'abc'``; date and time constants in ISO
form, ``'2024-01-02'``, ``'12.30.00'``, ``'2024-01-02-12.30.00.000000'``), a special register
(``CURRENT DATE``), or ``NULL``. Debezium picks a mapper by the column's JDBC type: numbers and
DECFLOAT as the text, BOOLEAN ``1``/``0``/``true``, DOUBLE/REAL parsed, CHAR/GRAPHIC unquoted and padded
with blanks to the column's length, VARCHAR/VARGRAPHIC unquoted (a doubled quote stays doubled, as
Debezium's ``unquote`` leaves it), DATE/TIME/TIMESTAMP through ``SELECT DATE(<text>) FROM
sysibm.sysdummy1`` on the server (here parsed locally from the ISO forms Db2 stores), and
``CURRENT DATE|TIME|TIMESTAMP``: no default for a nullable column, the epoch for a NOT NULL one. Other
types (CLOB, BLOB, BINARY, FOR BIT DATA, XML, LONG VARCHAR) have no mapper and no default. The parsed
value goes through the column's converter; a result that is a struct (DECFLOAT as
VariableScaleDecimal) gives no default (KAFKA-12694), an unparsable text a warning and no default.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import date, datetime, time
from typing import Any

from cdc_core.schema import Schema
from cdc_db2.timestamps import parse as parse_timestamp

_log = logging.getLogger("cdc_db2.defaults")


def _unquote(v: str) -> str:
    """Db2DefaultValueConverter.unquote: strips ``('...')`` or ``'...'``, nothing else."""
    if v.startswith("('") and v.endswith("')"):
        return v[2:-2]
    if len(v) >= 2 and v.startswith("'") and v.endswith("'"):
        return v[1:-1]
    return v


def _boolean(v: str) -> bool:
    return True if v == "1" else False if v == "0" else v.lower() == "true"


def _date(v: str) -> date:
    return date.fromisoformat(_unquote(v))


def _time(v: str) -> time:
    return time.fromisoformat(_unquote(v).replace(".", ":"))


def _timestamp(v: str) -> str:
    """``'YYYY-MM-DD-HH.MM.SS[.fff...]'`` (Db2's ISO form) or ``'YYYY-MM-DD HH:MM:SS...'``, checked and given to the
    column's converter as text, which keeps up to nine fractional digits (cdc_db2.timestamps).

    Debezium reads ``SELECT TIMESTAMP(<default>) FROM sysibm.sysdummy1`` with ``getTimestamp`` (nanoseconds);
    cdc assumes Db2 keeps the constant's fractional digits there, so a TIMESTAMP(9) column's default keeps its
    nanoseconds as its values do (not verified against a real Db2: IBM's documentation of the one-argument
    TIMESTAMP function does not say the precision of its result for a string).
    """
    text = _unquote(v).strip()
    parse_timestamp(text)
    return text


#: CURRENT DATE / TIME / TIMESTAMP of a NOT NULL column (Debezium: 0L, 00:00:00, 1970-01-01 00:00:00).
_EPOCH = {"CURRENT DATE": date(1970, 1, 1), "CURRENT TIME": time(0, 0),
          "CURRENT TIMESTAMP": datetime(1970, 1, 1)}

#: java.sql.Types of the column -> parser of the trimmed text (NULL is handled before).
_MAPPERS: dict[int, Callable[[str], Any]] = {
    16: _boolean, -5: str, 2: str, 4: str, 5: str, 3: str, 1111: str,
    8: float, 7: float,
    91: _date, 92: _time, 93: _timestamp,
    1: _unquote, 12: _unquote,  # CHAR is padded below
}


def default_value(jdbc_type: int, type_name: str, length: int, nullable: bool, text: str | None,
                  convert: Callable[[Any], Any]) -> Any:
    """The JSON value of a column's default (None: no default in the schema)."""
    if text is None:
        return None
    mapper = _MAPPERS.get(jdbc_type)
    if mapper is None or (jdbc_type == 1111 and type_name != "DECFLOAT"):
        _log.warning("Mapper for type '%s' not found.", jdbc_type)
        return None
    v = text.strip()
    if v.upper() == "NULL":
        return None
    try:
        register = " ".join(v.upper().split())
        if jdbc_type in (91, 92, 93) and register in _EPOCH:
            if nullable:
                return None
            raw: Any = _EPOCH[register]
        else:
            raw = mapper(v)
            if jdbc_type == 1:
                raw = raw.ljust(length)
        value = convert(raw)
    except Exception:  # noqa: BLE001 - as Debezium: an expression is not evaluated, the schema has no default
        _log.warning("Cannot parse column default value '%s' to type '%s'.  Expression evaluation is not supported.",
                     text, jdbc_type)
        return None
    if isinstance(value, dict):
        _log.warning("Struct can't be used as default value for column, will use null instead.")
        return None
    return value


def with_default(schema: Schema | None, value: Any) -> Schema | None:
    """``schema`` with ``value`` as its ``default`` (the same schema when there is none)."""
    if schema is None or value is None:
        return schema
    return Schema(type=schema.type, optional=schema.optional, name=schema.name, version=schema.version,
                  doc=schema.doc, parameters=schema.parameters, default=value, fields=schema.fields,
                  items=schema.items, keys=schema.keys, values=schema.values)
