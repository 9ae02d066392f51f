"""A column's source type name, length and scale as Debezium 2.7 knows them (``column.propagate.source.type``).

Debezium takes them from two places, which disagree in two details:

* tables read from the catalog (snapshot, connector start): pgjdbc's ``DatabaseMetaData.getColumns``
  (``TYPE_NAME``, ``COLUMN_SIZE``, ``DECIMAL_DIGITS``), where an int column defaulting to
  ``nextval(...)`` is ``serial``/``bigserial``/``smallserial`` and an unconstrained numeric has
  size 0 and no scale; domains get Debezium's ``PostgresType.getDefaultLength/Scale``;
* tables rebuilt from a pgoutput Relation message (``ColumnMetaData``): ``pg_type.typname`` and
  pgjdbc's ``TypeInfoCache.getPrecision/getScale`` of the type modifier, or the type's default
  length/scale without one (unconstrained numeric: 131089 and 0).

The numbers are pgjdbc 42.6's ``TypeInfoCache`` (the driver Debezium 2.7.4 ships).
"""

from __future__ import annotations

__all__ = ["UNKNOWN_LENGTH", "source_length_scale", "source_type_name"]

#: pgjdbc's ``unknownLength`` (Integer.MAX_VALUE): the size of types without one.
UNKNOWN_LENGTH = 2**31 - 1
_TEMPORAL = frozenset({"time", "timetz", "timestamp", "timestamptz"})
_SERIALS = {"int4": "serial", "int8": "bigserial", "int2": "smallserial"}


def _display_size(name: str, typmod: int) -> int:
    """``TypeInfoCache.getDisplaySize``."""
    fixed = {"int2": 6, "int4": 11, "oid": 10, "int8": 20, "float4": 15, "float8": 25, "char": 1, "bool": 1,
             "date": 13, "interval": 49}
    if name in fixed:
        return fixed[name]
    if name in _TEMPORAL:
        seconds = {-1: 7, 0: 0, 1: 3}.get(typmod, typmod + 1)
        return {"time": 8, "timetz": 14, "timestamp": 22, "timestamptz": 28}[name] + seconds
    if name in ("varchar", "bpchar"):
        return UNKNOWN_LENGTH if typmod == -1 else typmod - 4
    if name == "numeric":
        if typmod == -1:
            return 131089
        precision, scale = ((typmod - 4) >> 16) & 0xFFFF, (typmod - 4) & 0xFFFF
        return 1 + precision + (1 if scale else 0)
    if name == "bit":
        return typmod
    if name == "varbit":
        return UNKNOWN_LENGTH if typmod == -1 else typmod
    return UNKNOWN_LENGTH


def _precision(name: str, typmod: int) -> int:
    """``TypeInfoCache.getPrecision``."""
    fixed = {"int2": 5, "oid": 10, "int4": 10, "int8": 19, "float4": 8, "float8": 17, "char": 1, "bool": 1}
    if name in fixed:
        return fixed[name]
    if name == "numeric":
        return 0 if typmod == -1 else ((typmod - 4) & 0xFFFF0000) >> 16
    if name in ("bpchar", "varchar"):
        return UNKNOWN_LENGTH if typmod == -1 else typmod - 4
    if name == "date" or name == "interval" or name in _TEMPORAL:
        return _display_size(name, typmod)
    if name == "bit":
        return typmod
    if name == "varbit":
        return UNKNOWN_LENGTH if typmod == -1 else typmod
    return UNKNOWN_LENGTH


def _scale(name: str, typmod: int) -> int:
    """``TypeInfoCache.getScale``."""
    if name in ("float4", "float8"):
        return 8 if name == "float4" else 17
    if name == "numeric":
        return 0 if typmod == -1 else (typmod - 4) & 0xFFFF
    if name in _TEMPORAL:
        return 6 if typmod == -1 else typmod
    if name == "interval":
        return 6 if typmod == -1 else typmod & 0xFFFF
    return 0


def _default_length(name: str) -> int:
    """``PostgresType.getDefaultLength`` of a type without a modifier: its precision, else its display size."""
    return _precision(name, -1) or _display_size(name, -1)


def source_length_scale(base: str, typmod: int, domain_typmod: int | None, is_array: bool,
                        relation: bool) -> tuple[int, int | None]:
    """(length, scale) Debezium gives a column.

    ``base`` is the ``pg_type.typname`` under every domain (an array's element type for arrays,
    which pgjdbc sizes by their element); ``typmod`` the column's ``atttypmod``; ``domain_typmod``
    the nearest domain's type modifier for a domain column (None if the column is no domain);
    ``relation`` True for a table built from a Relation message.
    """
    if domain_typmod is not None:
        # PostgresType.getDefaultLength/Scale, walking up to the domain that has a modifier.
        if domain_typmod == -1:
            return _default_length(base), _scale(base, -1)
        size = _precision(base, domain_typmod) or _display_size(base, domain_typmod)
        return (size if size not in (0, UNKNOWN_LENGTH) else _default_length(base)), _scale(base, domain_typmod)
    if relation:
        if typmod != -1:
            return _precision(base, typmod), _scale(base, typmod)
        return _default_length(base), _scale(base, -1)
    length = _precision(base, typmod)
    numeric = base == "numeric" and not is_array  # java.sql.Types.NUMERIC
    if length == 0 and not numeric:
        length = _display_size(base, typmod)
    return length, (None if numeric and typmod == -1 else _scale(base, typmod))


def source_type_name(type_name: str, default_expression: str | None, relation: bool) -> str:
    """The type name Debezium reports: pgjdbc's ``serial`` names for catalog columns defaulting to a sequence."""
    if not relation and default_expression is not None and "nextval(" in default_expression:
        return _SERIALS.get(type_name, type_name)
    return type_name
