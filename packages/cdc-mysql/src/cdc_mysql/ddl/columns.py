"""Column definitions and table options from sqlglot's trees: types, defaults, keys, charsets."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlglot import exp

from cdc_mysql.ddl.declared import DEFAULT_DIMENSIONS, NATIONAL_JDBC_TYPES, DeclaredType
from cdc_mysql.ddl.tokens import DIALECT
from cdc_mysql.model import CHARACTER_TYPES, JDBC_TYPES, ColumnDef, TableId

_TYPE_NAMES: dict[exp.DataType.Type, str] = {}
for _names, _canonical in (
    (("TINYINT", "UTINYINT"), "TINYINT"), (("SMALLINT", "USMALLINT"), "SMALLINT"),
    (("MEDIUMINT", "UMEDIUMINT"), "MEDIUMINT"), (("INT", "UINT"), "INT"), (("BIGINT", "UBIGINT"), "BIGINT"),
    (("DECIMAL", "UDECIMAL", "BIGDECIMAL", "DECIMAL32", "DECIMAL64", "DECIMAL128"), "DECIMAL"),
    (("FLOAT", "UFLOAT"), "FLOAT"), (("DOUBLE", "UDOUBLE"), "DOUBLE"), (("BOOLEAN",), "BOOLEAN"),
    (("BIT",), "BIT"), (("CHAR", "NCHAR"), "CHAR"), (("VARCHAR", "NVARCHAR"), "VARCHAR"),
    (("TEXT",), "TEXT"), (("TINYTEXT",), "TINYTEXT"), (("MEDIUMTEXT",), "MEDIUMTEXT"), (("LONGTEXT",), "LONGTEXT"),
    (("BINARY",), "BINARY"), (("VARBINARY",), "VARBINARY"), (("BLOB",), "BLOB"), (("TINYBLOB",), "TINYBLOB"),
    (("MEDIUMBLOB",), "MEDIUMBLOB"), (("LONGBLOB",), "LONGBLOB"), (("DATE",), "DATE"), (("TIME",), "TIME"),
    (("DATETIME", "DATETIME2", "DATETIME64"), "DATETIME"), (("TIMESTAMP", "TIMESTAMPTZ", "TIMESTAMPLTZ"), "TIMESTAMP"),
    (("YEAR",), "YEAR"), (("JSON",), "JSON"), (("ENUM",), "ENUM"), (("SET",), "SET"), (("GEOMETRY",), "GEOMETRY"),
    (("SERIAL",), "SERIAL"),
):
    for _n in _names:
        if hasattr(exp.DataType.Type, _n):
            _TYPE_NAMES[getattr(exp.DataType.Type, _n)] = _canonical

_UNSIGNED_TYPES = {getattr(exp.DataType.Type, n) for n in ("UTINYINT", "USMALLINT", "UMEDIUMINT", "UINT", "UBIGINT",
                                                            "UDECIMAL", "UFLOAT", "UDOUBLE") if hasattr(exp.DataType.Type, n)}
#: Type names sqlglot does not know, read as user-defined types.
_EXTRA_TYPES = {"POINT", "LINESTRING", "POLYGON", "MULTIPOINT", "MULTILINESTRING", "MULTIPOLYGON",
                "GEOMETRYCOLLECTION", "GEOMCOLLECTION", "MIDDLEINT", "INET4", "INET6", "UUID"}
#: Default (length, scale) Debezium gives types declared without one (by canonical name, when the declared one is unknown).
_DEFAULT_LENGTHS = {"DECIMAL": (10, 0), "BIT": (1, None)}


def literal_text(e: exp.Expression) -> str:
    """A literal's text (other expressions as MySQL SQL)."""
    if isinstance(e, exp.Literal):
        return str(e.this)
    return e.sql(dialect=DIALECT)


def column_type_attrs(kind: exp.DataType, column: str, declared: DeclaredType | None = None) -> dict[str, Any]:
    """The type attributes of a column from sqlglot's DataType and (where read) the type as declared.

    The declared type decides the canonical name, the name Debezium writes and the signedness
    (sqlglot maps some synonyms wrongly: ``INT8`` is BIGINT, ``REAL`` DOUBLE); sqlglot gives the
    length, scale and ENUM/SET values. Lengths are Debezium's: ENUM 1, SET the number of values
    plus commas, DECIMAL-family (10,0) by default and scale 0 when only a precision is given.
    """
    attrs = _sqlglot_type_attrs(kind, column)
    if declared is None:
        return attrs
    if declared.name == "SERIAL":  # BIGINT UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE: Debezium names it BIGINT UNSIGNED
        declared = DeclaredType("BIGINT", True, False, False)
    if not declared.known:
        return attrs
    attrs["type_name"] = declared.canonical
    if declared.name != attrs["type_name"]:
        attrs["declared"] = declared.name
    attrs["unsigned"] = declared.unsigned
    if declared.zerofill:
        attrs["zerofill"] = True
    dims = DEFAULT_DIMENSIONS.get(declared.name)
    if dims is not None:
        if not declared.has_length:
            attrs["length"], attrs["scale"] = dims
        elif dims[1] is not None and attrs.get("scale") is None:
            attrs["scale"] = dims[1]
    if JDBC_TYPES.get(declared.name) in NATIONAL_JDBC_TYPES:
        attrs["charset"] = "utf8"
        if attrs.get("length") is None and JDBC_TYPES[declared.name] == -15:
            attrs["length"] = 1
    return attrs


def _sqlglot_type_attrs(kind: exp.DataType, column: str) -> dict[str, Any]:
    t = kind.this
    if t == exp.DataType.Type.USERDEFINED:
        name = str(kind.args.get("kind") or "").upper()
        if name not in _EXTRA_TYPES:
            raise ValueError(f"unknown type {name!r} of column {column!r}")
    elif t in _TYPE_NAMES:
        name = _TYPE_NAMES[t]
    elif t == exp.DataType.Type.UUID:
        name = "UUID"
    else:
        raise ValueError(f"unsupported type {kind.sql(dialect=DIALECT)!r} of column {column!r}")
    params = [p.this if isinstance(p, exp.DataTypeParam) else p for p in kind.expressions]
    attrs: dict[str, Any] = {"type_name": name, "unsigned": t in _UNSIGNED_TYPES}
    if name in ("ENUM", "SET"):
        attrs["enum_values"] = tuple(str(p.this) if isinstance(p, exp.Literal) else literal_text(p) for p in params)
        # Debezium's lengths (ColumnDefinitionParserListener): 1 for an ENUM, values + commas for a SET.
        attrs["length"] = 1 if name == "ENUM" else max(0, 2 * len(attrs["enum_values"]) - 1)
        return attrs
    numbers = [int(literal_text(p)) for p in params if literal_text(p).lstrip("-").isdigit()]
    if name == "SERIAL":
        attrs.update(type_name="BIGINT", unsigned=True, optional=False, auto_increment=True, serial=True)
        return attrs
    if numbers:
        attrs["length"] = numbers[0]
        if len(numbers) > 1:
            attrs["scale"] = numbers[1]
        elif name == "DECIMAL":
            attrs["scale"] = 0
    elif name in _DEFAULT_LENGTHS:
        attrs["length"], scale = _DEFAULT_LENGTHS[name]
        if scale is not None:
            attrs["scale"] = scale
    return attrs


#: DEFAULT values Debezium writes as the epoch (its parser's stand-in for "now").
_NOW = (exp.CurrentTimestamp,)
EPOCH_DEFAULT = "1970-01-01 00:00:00"


def default_of(e: exp.Expression) -> tuple[bool, str | None]:
    """A DEFAULT clause as Debezium's DefaultValueParserListener records it: (has a default, its expression).

    ``NULL`` and hexadecimal literals set no default at all; a string keeps its charset introducer
    (``_utf8'abc'``) and a bit string loses its quotes (``b'101'`` is ``101``); CURRENT_TIMESTAMP and
    NOW() are ``1970-01-01 00:00:00``; an expression in parentheses is a default without a value.
    """
    if isinstance(e, (exp.Null, exp.HexString)):
        return False, None
    if isinstance(e, exp.Literal):
        return True, str(e.this)
    if isinstance(e, exp.Neg) and isinstance(e.this, exp.Literal) and not e.this.is_string:
        return True, "-" + str(e.this.this)
    if isinstance(e, exp.Introducer) and isinstance(e.expression, exp.Literal):
        return True, f"{e.this.name if isinstance(e.this, exp.Expression) else e.this}'{e.expression.this}'"
    if isinstance(e, exp.National):
        return True, f"N'{e.this}'"
    if isinstance(e, exp.Boolean):
        return True, "TRUE" if e.this else "FALSE"
    if isinstance(e, exp.BitString):
        return True, str(e.this)
    if isinstance(e, _NOW) or (isinstance(e, exp.Anonymous) and str(e.this).upper() == "NOW"):
        return True, EPOCH_DEFAULT
    if isinstance(e, (exp.Localtimestamp, exp.Localtime)):  # Debezium keeps the text (it reads no value from it)
        return True, e.sql(dialect=DIALECT).upper()
    return True, None


def column_from_sqlglot(cd: exp.ColumnDef, position: int = 1,
                        declared: DeclaredType | None = None) -> tuple[ColumnDef, dict[str, bool]]:
    """A ColumnDef from sqlglot's column definition (and its declared type), plus whether it declared PRIMARY KEY / UNIQUE inline."""
    name = cd.this.name
    kind = cd.args.get("kind")
    if not isinstance(kind, exp.DataType):
        raise ValueError(f"column {name!r} has no type")
    attrs = column_type_attrs(kind, name, declared)
    serial = attrs.pop("serial", False)
    flags = {"primary": False, "unique": serial}
    for c in cd.constraints:
        k = c.kind
        if isinstance(k, exp.NotNullColumnConstraint):
            attrs["optional"] = bool(k.args.get("allow_null"))
        elif isinstance(k, exp.AutoIncrementColumnConstraint):
            attrs["auto_increment"] = True
        elif isinstance(k, exp.DefaultColumnConstraint):
            attrs["has_default"], attrs["default"] = default_of(k.this)
        elif isinstance(k, exp.PrimaryKeyColumnConstraint):
            flags["primary"] = True
            attrs["optional"] = False
        elif isinstance(k, exp.UniqueColumnConstraint):
            flags["unique"] = True
        elif isinstance(k, exp.CharacterSetColumnConstraint):
            attrs["charset"] = k.this.name.lower()
        elif isinstance(k, exp.CollateColumnConstraint):
            attrs["collation"] = k.this.name.lower()
        elif isinstance(k, exp.CommentColumnConstraint):
            attrs["comment"] = str(k.this.this) if isinstance(k.this, exp.Literal) else k.this.sql()
        elif isinstance(k, exp.ZeroFillColumnConstraint):
            attrs["zerofill"] = True
            attrs["unsigned"] = True
        elif isinstance(k, (exp.ComputedColumnConstraint, exp.GeneratedAsIdentityColumnConstraint)):
            attrs["generated"] = True
        elif k.__class__.__name__ == "UnsignedColumnConstraint":  # pragma: no cover - sqlglot variants
            attrs["unsigned"] = True
    if attrs.get("collation") and not attrs.get("charset"):
        attrs["charset"] = attrs["collation"].split("_")[0]
    if attrs["type_name"] not in CHARACTER_TYPES:
        attrs.pop("charset", None)
        attrs.pop("collation", None)
    return ColumnDef(name=name, position=position, **attrs), flags


def with_charset(col: ColumnDef, table_charset: str | None) -> ColumnDef:
    """The column with the table's charset if it holds characters and names none."""
    if col.type_name in CHARACTER_TYPES and col.type_name != "JSON" and col.charset is None:
        return replace(col, charset=table_charset)
    return col


def table_charset_of(props: exp.Expression | None) -> str | None:
    """The table charset named by CREATE TABLE options (CHARSET, else COLLATE's prefix)."""
    if props is None:
        return None
    for p in props.expressions:
        if isinstance(p, exp.CharacterSetProperty):
            return p.this.name.lower()
    for p in props.expressions:
        if isinstance(p, exp.CollateProperty):
            return p.this.name.lower().split("_")[0]
    return None


def table_id_of(table: exp.Expression, db: str | None) -> TableId:
    """The TableId of a table name, in ``db`` when it names no database."""
    if not isinstance(table, exp.Table):
        raise ValueError(f"expected a table name, got {table.sql()!r}")
    database = table.db or db
    if not database:
        raise ValueError(f"table {table.name!r} has no database and no database is selected")
    return TableId(database, table.name)


def table_constraint(item: exp.Expression) -> tuple[str, list[str]]:
    """Classify a table-level constraint: ("primary"|"unique"|"other", column names)."""
    node = item
    if isinstance(node, exp.Constraint):
        node = node.expressions[0] if node.expressions else node
    if isinstance(node, exp.PrimaryKey):
        return "primary", [key_part_name(e) for e in node.expressions]
    if isinstance(node, exp.UniqueColumnConstraint):
        schema = node.this
        cols = schema.expressions if isinstance(schema, exp.Schema) else []
        return "unique", [key_part_name(e) for e in cols]
    if isinstance(node, exp.IndexColumnConstraint) and str(node.args.get("kind") or "").upper() == "UNIQUE":
        return "unique", [key_part_name(e) for e in node.expressions]
    return "other", []


def key_part_name(e: exp.Expression) -> str:
    """The column of a key part (``col``, ``col(10)``, ``col DESC``)."""
    while isinstance(e, (exp.Ordered, exp.Anonymous)) and not isinstance(e, exp.Column):
        if isinstance(e, exp.Anonymous):  # col(10): a prefix length
            return str(e.this)
        e = e.this
    return e.name
