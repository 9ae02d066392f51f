"""Db2 column types to PostgreSQL column types for the stand-in's source tables, with what SYSCAT.COLUMNS shows."""

from __future__ import annotations

import re
from typing import NamedTuple

_TYPE = re.compile(r"\s*(?P<name>LONG\s+VARCHAR|LONG\s+VARGRAPHIC|DOUBLE\s+PRECISION|[A-Z]+)\s*"
                   r"(?:\(\s*(?P<a>\d+)\s*(?:,\s*(?P<b>\d+)\s*)?\))?\s*(?P<bits>FOR\s+BIT\s+DATA)?", re.I)


class ColumnType(NamedTuple):
    """A source column's PostgreSQL type and its Db2 catalog description."""

    pg_type: str
    typename: str
    length: int
    scale: int
    codepage: int


def column_type(db2_type: str) -> tuple[ColumnType, str]:
    """The stand-in type of a Db2 type text (``DECIMAL(10,2)``, ``VARCHAR(20) FOR BIT DATA``...), and the rest."""
    m = _TYPE.match(db2_type)
    if not m:
        raise ValueError(f"cannot read the Db2 type {db2_type!r}")
    name = " ".join(m.group("name").upper().split())
    a, b = m.group("a"), m.group("b")
    rest = db2_type[m.end():]
    if m.group("bits"):
        return ColumnType("bytea", "CHARACTER" if name in ("CHAR", "CHARACTER") else "VARCHAR", int(a or 1), 0, 0), rest
    if name in ("CHAR", "CHARACTER", "GRAPHIC"):
        n = int(a or 1)
        return ColumnType(f"char({n})", "CHARACTER" if name != "GRAPHIC" else "GRAPHIC", n, 0, 1208), rest
    if name in ("VARCHAR", "VARGRAPHIC"):
        return ColumnType(f"varchar({a})", name, int(a), 0, 1208), rest
    if name in ("CLOB", "DBCLOB", "LONG VARCHAR", "LONG VARGRAPHIC"):
        return ColumnType("text", name, int(a or 1048576), 0, 1208), rest
    if name in ("DECIMAL", "NUMERIC", "DEC"):
        p, s = int(a or 5), int(b or 0)
        return ColumnType(f"numeric({p},{s})", "DECIMAL", p, s, 0), rest
    if name == "DECFLOAT":
        # SYSCAT.COLUMNS.LENGTH of a DECFLOAT is its storage in bytes: 16 for DECFLOAT(34), 8 for DECFLOAT(16).
        return ColumnType("numeric", "DECFLOAT", 8 if a == "16" else 16, 0, 0), rest
    if name == "FLOAT" and a is not None and int(a) <= 24:
        return ColumnType("real", "REAL", 4, 0, 0), rest  # Db2: FLOAT(n), n <= 24, is REAL
    if name == "TIMESTAMP":
        p = int(a) if a is not None else 6
        # Above 6 digits: Db2's string in a type of its own (catalog_sql: standin.db2_timestamp, its trigger).
        pg = f"timestamp({p})" if p <= 6 else "standin.db2_timestamp"
        return ColumnType(pg, "TIMESTAMP", 10 if p == 0 else 11 + p, p, 0), rest
    if name in ("BINARY", "VARBINARY", "BLOB"):
        return ColumnType("bytea", name, int(a or 1), 0, 0), rest
    simple = {"SMALLINT": ("smallint", 2), "INTEGER": ("integer", 4), "INT": ("integer", 4), "BIGINT": ("bigint", 8),
              "REAL": ("real", 4), "DOUBLE": ("double precision", 8), "DOUBLE PRECISION": ("double precision", 8),
              "FLOAT": ("double precision", 8), "DATE": ("date", 4), "TIME": ("time(0)", 3),
              "XML": ("xml", 0), "BOOLEAN": ("boolean", 1)}
    if name in simple:
        pg, length = simple[name]
        canonical = {"INT": "INTEGER", "DOUBLE PRECISION": "DOUBLE", "FLOAT": "DOUBLE"}.get(name, name)
        return ColumnType(pg, canonical, length, 0, 0), rest
    raise ValueError(f"the stand-in has no PostgreSQL type for the Db2 type {name}")


_DEFAULT = re.compile(r"(?:\bWITH\s+)?\bDEFAULT\s+(?P<expr>'(?:[^']|'')*'|NULL\b|CURRENT\s+(?:DATE|TIMESTAMP|TIME)\b|"
                      r"[-+]?[0-9.]+(?:E[-+]?\d+)?|TRUE\b|FALSE\b)", re.I)
_PG_REGISTERS = {"CURRENT DATE": "CURRENT_DATE", "CURRENT TIME": "LOCALTIME(0)", "CURRENT TIMESTAMP": "LOCALTIMESTAMP"}


def _db2_temporal(typename: str, literal: str, scale: int = 6) -> tuple[str, str]:
    """A date/time constant as Db2 stores it (ISO: ``'12.30.00'``, ``'2024-01-02-12.30.00.000000'``; a TIMESTAMP(7..12)
    with its p digits) and as PostgreSQL reads it."""
    text = literal[1:-1].strip()
    if typename == "DATE":
        return f"'{text}'", f"'{text}'"
    if typename == "TIME":
        hms = text.replace(".", ":")
        return f"'{hms.replace(':', '.')}'", f"'{hms}'"
    day, clock = text[:10], text[11:]
    if ":" in clock:
        hms, _, fraction = clock.partition(".")
    else:
        hms, fraction = clock[:8].replace(".", ":"), clock[9:]
    digits = max(scale, 6)
    fraction = (fraction + "0" * digits)[:digits]
    db2 = f"'{day}-{hms.replace(':', '.')}.{fraction}'"
    return db2, db2 if scale > 6 else f"'{day} {hms}.{fraction}'"


def default_clause(typename: str, rest: str, scale: int = 6) -> tuple[str | None, str]:
    """``SYSCAT.COLUMNS.DEFAULT`` for a column's constraints text (None without a DEFAULT), and the text for PostgreSQL."""
    m = _DEFAULT.search(rest)
    if not m:
        return None, rest
    expr = m.group("expr")
    register = " ".join(expr.upper().split())
    if register in _PG_REGISTERS:
        db2, pg = register, _PG_REGISTERS[register]
    elif register == "NULL":
        db2, pg = "NULL", "NULL"
    elif expr.startswith("'") and typename in ("DATE", "TIME", "TIMESTAMP"):
        db2, pg = _db2_temporal(typename, expr, scale)
    else:
        db2, pg = expr, expr
    return db2, rest[:m.start()] + f"DEFAULT {pg}" + rest[m.end():]
