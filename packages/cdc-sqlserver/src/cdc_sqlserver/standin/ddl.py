"""``CREATE TABLE`` in T-SQL, run on the stand-in: the PostgreSQL table, plus SQL Server's column types recorded.

SQL Server's catalog (``sys.columns``/``sys.types``) names types PostgreSQL does not have, so the
declared T-SQL type of every column is kept in ``standin.column_types`` and shown through the
``sys`` views; the PostgreSQL column gets the closest type that holds the same values.
"""

from __future__ import annotations

import re
from typing import Any

import sqlglot
from sqlglot import exp

from cdc_sqlserver.standin.catalog_sql import TYPES

_DEFAULT_SCALE = {"time": 7, "datetime2": 7, "datetimeoffset": 7, "datetime": 3, "smalldatetime": 0}


def _declared(ddl: str, column: str) -> str:
    """The type name the DDL declares for ``column`` (sqlglot folds REAL into FLOAT and TEXT into VARCHAR(MAX))."""
    m = re.search(r'(?:[\[\"]%s[\]\"]|\b%s\b)\s+\[?(\w+)' % (re.escape(column), re.escape(column)), ddl, re.I)
    if not m or m.group(1).lower() not in TYPES and m.group(1).lower() not in ("integer", "rowversion"):
        raise ValueError(f"the stand-in cannot hold column {column!r}: its type is not one of {sorted(TYPES)}")
    name = m.group(1).lower()
    return {"integer": "int", "rowversion": "timestamp"}.get(name, name)


def _params(kind: exp.DataType) -> list[str]:
    """A data type's parameters as T-SQL text (``10``, ``MAX``)."""
    return [e.sql("tsql").upper() for e in kind.expressions]


def _pg_type(name: str, params: list[str]) -> str:
    """The PostgreSQL type that stands in for a SQL Server type."""
    p = [int(x) for x in params if x.isdigit()]
    if name in ("decimal", "numeric"):
        precision, scale = (p + [18, 0])[0], (p[1] if len(p) > 1 else 0)
        return f"NUMERIC({precision}, {scale})"
    if name in ("char", "nchar"):
        return f"CHAR({p[0] if p else 1})"
    if name in ("varchar", "nvarchar"):
        return f"VARCHAR({p[0]})" if p else "TEXT"
    if name in ("time", "datetime2"):
        precision = min(p[0] if p else 7, 6)
        return f"TIME({precision})" if name == "time" else f"TIMESTAMP({precision})"
    return {
        "bit": "BOOLEAN", "tinyint": "SMALLINT", "smallint": "SMALLINT", "int": "INTEGER", "bigint": "BIGINT",
        "real": "REAL", "float": "DOUBLE PRECISION", "money": "NUMERIC(19, 4)", "smallmoney": "NUMERIC(10, 4)",
        "text": "TEXT", "ntext": "TEXT", "date": "DATE", "datetime": "TIMESTAMP(3)", "smalldatetime": "TIMESTAMP(0)",
        "datetimeoffset": "TIMESTAMPTZ", "uniqueidentifier": "UUID", "binary": "BYTEA", "varbinary": "BYTEA",
        "image": "BYTEA", "xml": "XML", "timestamp": "BYTEA", "hierarchyid": "BYTEA", "geometry": "BYTEA",
        "geography": "BYTEA", "sql_variant": "TEXT",
    }[name]


def _facts(name: str, params: list[str]) -> tuple[int, int, int]:
    """``(max_length, precision, scale)`` as ``sys.columns`` gives them."""
    p = [int(x) for x in params if x.isdigit()]
    if name in ("decimal", "numeric"):
        precision, scale = (p + [18, 0])[0], (p[1] if len(p) > 1 else 0)
        return 17, precision, scale
    if name in _DEFAULT_SCALE:
        return 8, 0, p[0] if p else _DEFAULT_SCALE[name]
    if name in ("char", "varchar", "binary", "varbinary"):
        return (p[0] if p else (-1 if params else 1)), 0, 0
    if name in ("nchar", "nvarchar"):
        return (2 * p[0] if p else (-1 if params else 2)), 0, 0
    fixed = {"bit": (1, 1), "tinyint": (1, 3), "smallint": (2, 5), "int": (4, 10), "bigint": (8, 19),
             "real": (4, 24), "float": (8, 53), "money": (8, 19), "smallmoney": (4, 10), "date": (3, 10),
             "uniqueidentifier": (16, 0), "timestamp": (8, 0), "hierarchyid": (892, 0), "sql_variant": (8016, 0)}
    length, precision = fixed.get(name, (-1, 0))
    scale = 4 if name in ("money", "smallmoney") else 0
    return length, precision, scale


_OPERATORS = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%"}


def _rendered(value: exp.Expression) -> str:
    """An expression as SQL Server writes it back in a definition: the author's parentheses dropped, every
    number in its own (``(1)``, ``(-1)``, ``-(1)``), no blanks around operators and after commas ("white
    spaces are removed from the decoded expression": sys.default_constraints' documentation),
    ``N'..'`` kept, strings as written; other functions lower-cased (SQL Server brackets type names,
    ``CONVERT([varchar](10),getdate(),(120))``, and keeps the names the author used, ``sysdatetime()``,
    where sqlglot gives ``convert(varchar(10),getdate(),(120))`` and ``getdate()``)."""
    if isinstance(value, exp.Paren):
        return _rendered(value.this)
    if isinstance(value, exp.National):
        return "N'" + value.name.replace("'", "''") + "'"
    if isinstance(value, exp.Literal):
        return "'" + value.name.replace("'", "''") + "'" if value.is_string else f"({value.name})"
    if isinstance(value, exp.Null):
        return "NULL"
    if isinstance(value, exp.Neg):
        inner = value.this
        if isinstance(inner, exp.Literal) and not inner.is_string:
            return f"(-{inner.name})"
        return "-" + _rendered(inner)
    if type(value) in _OPERATORS:
        return _rendered(value.this) + _OPERATORS[type(value)] + _rendered(value.expression)
    copy, texts = value.copy(), {}
    for i, lit in enumerate(list(copy.find_all(exp.Literal, exp.National))):
        if not isinstance(lit.parent, exp.DataTypeParam):
            texts[f"zzlit{i}zz"] = _rendered(lit)
            lit.replace(exp.column(f"zzlit{i}zz"))
    text = copy.sql("tsql").lower().replace(", ", ",")
    for key, literal in texts.items():
        text = text.replace(key, literal)
    return text


def _definition(cd: exp.ColumnDef) -> str | None:
    """The column's DEFAULT as ``sys.default_constraints.definition`` shows it: ``((0))``, ``('abc')``,
    ``(N'abc')``, ``(-(1))``, ``((1)+(2))``, ``(getdate())``."""
    for c in cd.args.get("constraints") or []:
        kind = c.args.get("kind")
        if isinstance(kind, exp.DefaultColumnConstraint):
            return f"({_rendered(kind.this)})"
    return None


def _table_primary_keys(tree: exp.Expression) -> None:
    """``PRIMARY KEY (a, b)`` as PostgreSQL takes it: sqlglot reads T-SQL's key columns as ordered (``NULLS FIRST``),
    and a key column list written after a column without a comma (``name varchar(20) primary key(id)``, which
    SQL Server takes as a table constraint) as that column's constraint: made a table constraint."""
    schema = tree.this
    for pk in list(tree.find_all(exp.PrimaryKey)):
        pk.set("expressions", [e.this if isinstance(e, exp.Ordered) else e for e in pk.expressions])
        holder = pk.parent
        if isinstance(holder, exp.ColumnConstraint) and isinstance(holder.parent, exp.ColumnDef):
            holder.pop()
            schema.append("expressions", pk)


def _alias(kind: exp.DataType, aliases: dict[str, tuple[str, str]]) -> tuple[str, exp.DataType, str] | None:
    """An alias type's (name as created, base DataType, base name) when ``kind`` names one of ``aliases``."""
    if kind.this != exp.DataType.Type.USERDEFINED:
        return None
    written = str(kind.args.get("kind") or "").split(".")[-1].strip("[]").lower()
    if written not in aliases:
        return None  # a system type sqlglot does not know (hierarchyid), or none: _declared decides
    name, base = aliases[written]
    return name, exp.DataType.build(base, dialect="tsql"), re.match(r"\s*\[?(\w+)", base)[1].lower()


def translate_create_table(ddl: str, aliases: dict[str, tuple[str, str]] | None = None
                           ) -> tuple[str, str, str, list[tuple[Any, ...]]]:
    """``(schema, table, PostgreSQL DDL, [(column, type, max_length, precision, scale, is_identity, default)])``;
    ``aliases``: the alias types (lower-case name -> (name, base type's T-SQL)), recorded under their own name."""
    tree = sqlglot.parse_one(ddl, read="tsql")
    if not isinstance(tree, exp.Create) or tree.kind != "TABLE":
        raise ValueError("create_table takes one CREATE TABLE statement")
    table = tree.find(exp.Table)
    assert table is not None
    _table_primary_keys(tree)
    columns: list[tuple[Any, ...]] = []
    for cd in tree.find_all(exp.ColumnDef):
        kind = cd.args["kind"]
        alias = _alias(kind, aliases or {})
        if alias is not None:
            recorded, kind, name = alias
        else:
            name = _declared(ddl, cd.name)
            recorded = name
        params = _params(kind)
        if name == "float" and params and params[0].isdigit() and int(params[0]) <= 24:
            name, params = "real", []  # FLOAT(1..24) is REAL (sys.types), as Debezium's IT's float(10) shows
        identity = int(any(isinstance(c.args.get("kind"), exp.GeneratedAsIdentityColumnConstraint)
                           for c in cd.args.get("constraints") or []))
        columns.append((cd.name, recorded if alias else name, *_facts(name, params), identity, _definition(cd)))
        if name in ("binary", "varbinary", "image"):  # 0x0102 is a bit string to PostgreSQL: a bytea literal
            for c in cd.args.get("constraints") or []:
                kind = c.args.get("kind")
                value = kind.this if isinstance(kind, exp.DefaultColumnConstraint) else None
                while isinstance(value, exp.Paren):
                    value = value.this
                if isinstance(value, exp.HexString):
                    kind.set("this", exp.cast(exp.Literal.string("\\x" + value.this), "bytea"))
        if name == "bit":  # PostgreSQL's boolean takes no integer default
            for c in cd.args.get("constraints") or []:
                kind = c.args.get("kind")
                value = kind.this if isinstance(kind, exp.DefaultColumnConstraint) else None
                while isinstance(value, exp.Paren):
                    value = value.this
                if isinstance(value, exp.Literal):
                    kind.set("this", exp.Boolean(this=value.name not in ("0", "")))
        cd.set("kind", exp.DataType.build(_pg_type(name, params), dialect="postgres"))
    return table.db or "dbo", table.name, tree.sql("postgres"), columns


def quote(name: str) -> str:
    """A PostgreSQL quoted identifier."""
    return '"' + name.replace('"', '""') + '"'


def record(conn: Any, schema: str, table: str, columns: list[tuple[Any, ...]]) -> None:
    """Record the declared T-SQL types of a new table's columns."""
    oid = conn.execute("SELECT %s::regclass::oid::int", (f"{quote(schema)}.{quote(table)}",)).fetchone()[0]
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO standin.column_types VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                        [(oid, *c) for c in columns])
