"""MySQL/MariaDB DDL applied to the table model: sqlglot parses, this module interprets.

Statements are classified by their leading keywords (sqlglot's tokenizer, so quoting and comments
are handled). CREATE TABLE goes through sqlglot's MySQL parser; ALTER TABLE is split into its
actions here, each column definition parsed by sqlglot; RENAME, DROP, TRUNCATE and the database
statements are read from the tokens. Anything that is not table or database DDL is ignored. A
statement that touches tables but cannot be understood raises ``UnparseableDdl`` (naming the
tables, when they can be told), and the model is left unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token, TokenType

from cdc_mysql.model import CHARACTER_TYPES, SPATIAL_TYPES, ColumnDef, TableChange, TableDef, TableId


class DdlDialect(MySQL):
    """sqlglot's MySQL dialect, reading unknown type names (POINT, MULTIPOLYGON, ...) as user-defined types."""

    SUPPORTS_USER_DEFINED_TYPES = True

    class Tokenizer(MySQL.Tokenizer):
        """MySQL's tokenizer, with RENAME a statement like any other (not an opaque command)."""

        COMMANDS = MySQL.Tokenizer.COMMANDS - {TokenType.RENAME}


_DIALECT = DdlDialect()


class UnparseableDdl(Exception):
    """A DDL statement touching tables that could not be understood; ``tables`` names them where known."""

    def __init__(self, statement: str, reason: str, tables: list[TableId] | None = None):
        self.statement = statement
        self.reason = reason
        self.tables = tables or []
        super().__init__(f"cannot parse DDL statement ({reason}): {statement}")


# --------------------------------------------------------------------------------- statements


@dataclass(frozen=True)
class Statement:
    """One statement of a script, with where it starts (1-based line and column)."""

    text: str
    line: int
    col: int


def split_statements(script: str) -> list[Statement]:
    """Split a script at top-level semicolons (quotes and comments respected)."""
    try:
        tokens = _DIALECT.tokenize(script)
    except SqlglotError:
        tokens = []
    out: list[Statement] = []
    start: Token | None = None
    for tok in tokens:
        if tok.token_type == TokenType.SEMICOLON:
            if start is not None:
                out.append(_statement(script, start, tok.start))
            start = None
        elif start is None:
            start = tok
    if start is not None:
        out.append(_statement(script, start, len(script)))
    if not tokens and script.strip():  # the tokenizer gave up: fall back to a plain split
        line = 1
        for part in script.split(";"):
            if part.strip():
                out.append(Statement(part.strip(), line + part[: len(part) - len(part.lstrip())].count("\n"), 1))
            line += part.count("\n")
    return out


def _statement(script: str, first: Token, end: int) -> Statement:
    begin = first.start
    # Tokens of quoted identifiers and strings start after the quote.
    while begin > 0 and script[begin - 1] in "`'\"":
        begin -= 1
    text = script[begin:end].strip()
    line = script.count("\n", 0, begin) + 1
    col = begin - (script.rfind("\n", 0, begin) + 1) + 1
    return Statement(text, line, col)


def _tokens(sql: str) -> list[Token]:
    try:
        return _DIALECT.tokenize(sql)
    except SqlglotError as e:
        raise UnparseableDdl(sql, f"cannot tokenize: {e}") from None


def _word(tok: Token) -> str:
    """An unquoted token's first word, upper-case (multi-word tokens such as ``PRIMARY KEY`` give ``PRIMARY``)."""
    if tok.token_type in (TokenType.IDENTIFIER, TokenType.STRING) or not tok.text:
        return ""
    return tok.text.split()[0].upper()


def _ident(tok: Token) -> str:
    return tok.text


# --------------------------------------------------------------------------------- types

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
#: Default lengths MySQL gives types declared without one.
_DEFAULT_LENGTHS = {"DECIMAL": (10, 0), "CHAR": (1, None), "BINARY": (1, None), "BIT": (1, None)}


def _literal_text(e: exp.Expression) -> str:
    if isinstance(e, exp.Literal):
        return str(e.this)
    return e.sql(dialect=_DIALECT)


def _column_type(kind: exp.DataType, column: str) -> dict[str, Any]:
    """The type attributes of a column from sqlglot's DataType."""
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
        raise ValueError(f"unsupported type {kind.sql(dialect=_DIALECT)!r} of column {column!r}")
    params = [p.this if isinstance(p, exp.DataTypeParam) else p for p in kind.expressions]
    attrs: dict[str, Any] = {"type_name": name, "unsigned": t in _UNSIGNED_TYPES}
    if name in ("ENUM", "SET"):
        attrs["enum_values"] = tuple(str(p.this) if isinstance(p, exp.Literal) else _literal_text(p) for p in params)
        attrs["length"] = max((len(v) for v in attrs["enum_values"]), default=0) if name == "ENUM" else None
        if name == "SET":
            attrs["length"] = sum(len(v) for v in attrs["enum_values"]) + max(len(attrs["enum_values"]) - 1, 0)
        return attrs
    numbers = [int(_literal_text(p)) for p in params if _literal_text(p).lstrip("-").isdigit()]
    if name == "SERIAL":
        attrs.update(type_name="BIGINT", unsigned=True, optional=False, auto_increment=True, serial=True)
        return attrs
    if numbers:
        attrs["length"] = numbers[0]
        if len(numbers) > 1:
            attrs["scale"] = numbers[1]
    elif name in _DEFAULT_LENGTHS:
        attrs["length"], scale = _DEFAULT_LENGTHS[name]
        if scale is not None:
            attrs["scale"] = scale
    return attrs


def _default_text(e: exp.Expression) -> str | None:
    """A DEFAULT clause's value as Debezium's ``defaultValueExpression`` holds it."""
    if isinstance(e, exp.Null):
        return None
    if isinstance(e, exp.Literal):
        return str(e.this)
    if isinstance(e, exp.Neg) and isinstance(e.this, exp.Literal):
        return "-" + str(e.this.this)
    if isinstance(e, exp.Boolean):
        return "1" if e.this else "0"
    if isinstance(e, exp.Paren):
        return _default_text(e.this)
    if isinstance(e, exp.CurrentTimestamp):
        return "CURRENT_TIMESTAMP"
    if isinstance(e, exp.HexString):
        return "0x" + str(e.this)
    if isinstance(e, exp.BitString):
        return "b'" + str(e.this) + "'"
    return e.sql(dialect=_DIALECT)


def column_from_sqlglot(cd: exp.ColumnDef, position: int = 1) -> tuple[ColumnDef, dict[str, bool]]:
    """A ColumnDef from sqlglot's column definition, plus whether it declared PRIMARY KEY / UNIQUE inline."""
    name = cd.this.name
    kind = cd.args.get("kind")
    if not isinstance(kind, exp.DataType):
        raise ValueError(f"column {name!r} has no type")
    attrs = _column_type(kind, name)
    serial = attrs.pop("serial", False)
    flags = {"primary": False, "unique": serial}
    for c in cd.constraints:
        k = c.kind
        if isinstance(k, exp.NotNullColumnConstraint):
            attrs["optional"] = bool(k.args.get("allow_null"))
        elif isinstance(k, exp.AutoIncrementColumnConstraint):
            attrs["auto_increment"] = True
        elif isinstance(k, exp.DefaultColumnConstraint):
            attrs["has_default"] = True
            attrs["default"] = _default_text(k.this)
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


# --------------------------------------------------------------------------------- preprocessing


def _preprocess(sql: str) -> str:
    """Rewrite constructs sqlglot's MySQL dialect rejects into equivalents it reads."""
    tokens = _tokens(sql)
    cuts: list[tuple[int, int, str]] = []  # (start, end, replacement) over the original text
    for i, tok in enumerate(tokens):
        word = _word(tok)
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if word == "NATIONAL" and nxt is not None and _word(nxt) in ("CHAR", "CHARACTER", "VARCHAR"):
            cuts.append((tok.start, nxt.start, ""))
        elif word == "SRID" and nxt is not None and nxt.token_type == TokenType.NUMBER:
            cuts.append((tok.start, nxt.end + 1, ""))
        elif word == "LONG" and nxt is not None and _word(nxt) in ("VARCHAR", "VARBINARY"):
            cuts.append((tok.start, nxt.end + 1, "MEDIUMTEXT" if _word(nxt) == "VARCHAR" else "MEDIUMBLOB"))
        elif word == "CHARACTER" and nxt is not None and _word(nxt) == "VARYING":
            cuts.append((tok.start, nxt.end + 1, "VARCHAR"))
        elif word == "COMPRESSED":  # MariaDB's column compression: no effect on the row format cdc reads
            end = tokens[i + 2].end + 1 if nxt is not None and nxt.token_type == TokenType.EQ and i + 2 < len(tokens) else tok.end + 1
            cuts.append((tok.start, end, ""))
        elif word == "REF_SYSTEM_ID" and i + 2 < len(tokens) and nxt is not None and nxt.token_type == TokenType.EQ:
            cuts.append((tok.start, tokens[i + 2].end + 1, ""))
        elif word == "PERSISTENT":  # MariaDB's name for STORED generated columns
            cuts.append((tok.start, tok.end + 1, "STORED"))
        elif word == "SERIAL" and [_word(t) for t in tokens[i + 1:i + 3]] == ["DEFAULT", "VALUE"]:
            cuts.append((tok.start, tokens[i + 2].end + 1, "NOT NULL AUTO_INCREMENT UNIQUE"))
        elif word in ("WITH", "WITHOUT") and [_word(t) for t in tokens[i + 1:i + 3]] == ["SYSTEM", "VERSIONING"]:
            cuts.append((tok.start, tokens[i + 2].end + 1, ""))
        elif word == "CHAR" and i + 4 < len(tokens) and tokens[i + 1].token_type == TokenType.L_PAREN \
                and _word(tokens[i + 4]) == "BYTE":  # CHAR(n) BYTE is BINARY(n)
            cuts.append((tok.start, tok.end + 1, "BINARY"))
            cuts.append((tokens[i + 4].start, tokens[i + 4].end + 1, ""))
        elif word == "LONG" and i > 0 and _is_bare_long(tokens, i):
            cuts.append((tok.start, tok.end + 1, "MEDIUMTEXT"))
    for start, end, text in reversed(cuts):
        sql = sql[:start] + text + sql[end:]
    return sql


#: Words that may follow a column type; a LONG before one of them (or a comma, a parenthesis) is the type.
_AFTER_TYPE = frozenset({",", ")", "NOT", "NULL", "DEFAULT", "CHARACTER", "CHARSET", "COLLATE", "COMMENT", "FIRST",
                         "AFTER", "BINARY", "ASCII", "UNICODE", "INVISIBLE", "CHECK"})


def _is_bare_long(tokens: list[Token], i: int) -> bool:
    """True if ``LONG`` at ``i`` is MySQL's MEDIUMTEXT type (after a column name), not a name or LONG VARCHAR."""
    prev = tokens[i - 1]
    if prev.token_type not in (TokenType.VAR, TokenType.IDENTIFIER) and not prev.text.startswith("`"):
        return False
    nxt = tokens[i + 1] if i + 1 < len(tokens) else None
    return nxt is None or nxt.text.upper() in _AFTER_TYPE


def _parse_one(sql: str) -> exp.Expression:
    try:
        return sqlglot.parse_one(_preprocess(sql), read=_DIALECT)
    except SqlglotError as e:
        raise UnparseableDdl(sql, str(e).splitlines()[0][:200]) from None


# --------------------------------------------------------------------------------- the model


@dataclass
class AppliedDdl:
    """What one statement did: the table changes, the databases it touched, and its kind."""

    kind: str  # "table", "database", "truncate", "use", "ignored"
    changes: list[TableChange] = field(default_factory=list)
    databases: list[str] = field(default_factory=list)
    truncated: list[TableId] = field(default_factory=list)


class SchemaModel:
    """Tables and database charsets, changed statement by statement."""

    def __init__(self, server_charset: str = "utf8mb4"):
        self.tables: dict[TableId, TableDef] = {}
        self.database_charsets: dict[str, str] = {}
        self.server_charset = server_charset

    # -- lookup -------------------------------------------------------------------------------

    def table(self, table_id: TableId) -> TableDef | None:
        """The current definition of a table, or None."""
        return self.tables.get(table_id)

    def charset_of(self, database: str) -> str:
        """A database's default charset (the server's when unknown)."""
        return self.database_charsets.get(database, self.server_charset)

    def put(self, table: TableDef) -> None:
        """Record a table definition (from the catalog or the history)."""
        self.tables[table.id] = table

    def copy(self) -> SchemaModel:
        """A shallow copy (table definitions are immutable)."""
        other = SchemaModel(self.server_charset)
        other.tables = dict(self.tables)
        other.database_charsets = dict(self.database_charsets)
        return other

    # -- statements ---------------------------------------------------------------------------

    def apply(self, sql: str, database: str | None) -> AppliedDdl:
        """Apply one statement run with ``database`` as the current database; UnparseableDdl if not understood."""
        tokens = [t for t in _tokens(sql)]
        if not tokens:
            return AppliedDdl("ignored")
        words = [_word(t) for t in tokens[:6]]
        try:
            return self._dispatch(sql, tokens, words, database)
        except UnparseableDdl as e:  # a part of the statement (a column definition) did not parse
            raise UnparseableDdl(sql, e.reason, e.tables or _mentioned_tables(tokens, database)) from None
        except (ValueError, KeyError, IndexError, AttributeError, TypeError) as e:
            raise UnparseableDdl(sql, str(e) or type(e).__name__, _mentioned_tables(tokens, database)) from None

    def _dispatch(self, sql: str, tokens: list[Token], words: list[str], db: str | None) -> AppliedDdl:
        first = words[0]
        rest = [w for w in words[1:]]
        if first == "USE" and len(tokens) > 1:
            return AppliedDdl("use", databases=[_ident(tokens[1])])
        if first == "CREATE":
            i = 1
            while i < len(tokens) and _word(tokens[i]) in ("OR", "REPLACE", "TEMPORARY"):
                i += 1
            if i < len(tokens) and _word(tokens[i]) == "TABLE":
                if "TEMPORARY" in words[:i]:
                    return AppliedDdl("ignored")
                return self._create_table(sql, db)
            if i < len(tokens) and _word(tokens[i]) in ("DATABASE", "SCHEMA"):
                return self._create_database(tokens[i + 1:])
            if i < len(tokens) and _word(tokens[i]) in ("UNIQUE", "INDEX", "FULLTEXT", "SPATIAL"):
                return self._create_index(tokens[i:], db)
            return AppliedDdl("ignored")
        if first == "ALTER":
            i = 1
            while i < len(tokens) and _word(tokens[i]) in ("ONLINE", "IGNORE", "OFFLINE"):
                i += 1
            if i < len(tokens) and _word(tokens[i]) == "TABLE":
                return self._alter_table(sql, tokens, i + 1, db)
            if i < len(tokens) and _word(tokens[i]) in ("DATABASE", "SCHEMA"):
                return self._alter_database(tokens[i + 1:], db)
            return AppliedDdl("ignored")
        if first == "DROP":
            i = 1
            temporary = False
            while i < len(tokens) and _word(tokens[i]) == "TEMPORARY":
                temporary, i = True, i + 1
            if i < len(tokens) and _word(tokens[i]) == "TABLE":
                return AppliedDdl("ignored") if temporary else self._drop_tables(tokens[i + 1:], db)
            if i < len(tokens) and _word(tokens[i]) in ("DATABASE", "SCHEMA"):
                return self._drop_database(tokens[i + 1:])
            if i < len(tokens) and _word(tokens[i]) == "INDEX":
                return AppliedDdl("ignored")
            return AppliedDdl("ignored")
        if first == "RENAME" and rest and rest[0] in ("TABLE", "TABLES"):
            return self._rename_tables(tokens[2:], db)
        if first == "TRUNCATE":
            i = 2 if rest and rest[0] == "TABLE" else 1
            names = _table_list(tokens[i:], db)
            return AppliedDdl("truncate", databases=sorted({t.database for t in names}), truncated=names)
        return AppliedDdl("ignored")

    # -- databases ----------------------------------------------------------------------------

    def _create_database(self, tokens: list[Token]) -> AppliedDdl:
        tokens = _skip_if_exists(tokens)
        name = _ident(tokens[0])
        charset = _charset_option(tokens[1:]) or self.server_charset
        self.database_charsets.setdefault(name, charset)
        return AppliedDdl("database", databases=[name])

    def _alter_database(self, tokens: list[Token], db: str | None) -> AppliedDdl:
        name = db
        if tokens and _word(tokens[0]) not in ("DEFAULT", "CHARACTER", "CHARSET", "COLLATE", "READ", "COMMENT"):
            name, tokens = _ident(tokens[0]), tokens[1:]
        charset = _charset_option(tokens)
        if name and charset:
            self.database_charsets[name] = charset
        return AppliedDdl("database", databases=[name] if name else [])

    def _drop_database(self, tokens: list[Token]) -> AppliedDdl:
        tokens = _skip_if_exists(tokens)
        name = _ident(tokens[0])
        changes = [TableChange("DROP", tid, self.tables[tid]) for tid in sorted(self.tables) if tid.database == name]
        for ch in changes:
            del self.tables[ch.id]
        self.database_charsets.pop(name, None)
        return AppliedDdl("database", changes, [name])

    # -- tables -------------------------------------------------------------------------------

    def _create_table(self, sql: str, db: str | None) -> AppliedDdl:
        tree = _parse_one(sql)
        if not isinstance(tree, exp.Create):
            raise UnparseableDdl(sql, "not a CREATE TABLE statement sqlglot understands", _mentioned_tables(_tokens(sql), db))
        schema = tree.this
        table_expr = schema.this if isinstance(schema, exp.Schema) else schema
        tid = _table_id(table_expr, db)
        if tree.args.get("exists") and tid in self.tables:
            return AppliedDdl("table", databases=[tid.database])
        props = tree.args.get("properties")
        like = props.find(exp.LikeProperty) if props is not None else None
        if like is not None:
            source = self.tables.get(_table_id(like.this, db))
            if source is None:
                raise UnparseableDdl(sql, f"CREATE TABLE ... LIKE names unknown table {_table_id(like.this, db)}", [tid])
            table = replace(source, id=tid)
        elif tree.args.get("expression") is not None:
            raise UnparseableDdl(sql, "CREATE TABLE ... AS SELECT: the columns come from the query", [tid])
        elif not isinstance(schema, exp.Schema):
            raise UnparseableDdl(sql, "CREATE TABLE without column definitions", [tid])
        else:
            table = self._table_from_schema(tid, schema, props, db)
        self.tables[tid] = table
        return AppliedDdl("table", [TableChange("CREATE", tid, table)], [tid.database])

    def _table_from_schema(self, tid: TableId, schema: exp.Schema, props: exp.Expression | None, db: str | None) -> TableDef:
        columns: list[ColumnDef] = []
        pk: list[str] = []
        uniques: list[tuple[str, ...]] = []
        charset = _table_charset(props)
        comment = None
        if props is not None:
            for p in props.expressions:
                if isinstance(p, exp.SchemaCommentProperty):
                    comment = str(p.this.this) if isinstance(p.this, exp.Literal) else p.this.sql()
        for item in schema.expressions:
            if isinstance(item, exp.ColumnDef):
                col, flags = column_from_sqlglot(item, len(columns) + 1)
                columns.append(col)
                if flags["primary"]:
                    pk = [col.name]
                if flags["unique"]:
                    uniques.append((col.name,))
            else:
                kind, names = _constraint(item)
                if kind == "primary":
                    pk = names
                elif kind == "unique":
                    uniques.append(tuple(names))
        table_charset = charset or self.charset_of(tid.database)
        columns = [self._with_charset(c, table_charset) for c in columns]
        pk_lower = {k.lower() for k in pk}
        columns = [replace(c, optional=False) if c.name.lower() in pk_lower else c for c in columns]
        names = {c.name.lower(): c.name for c in columns}
        pk = [names.get(k.lower(), k) for k in pk]
        return TableDef(tid, tuple(columns), tuple(pk), table_charset, comment,
                        tuple(tuple(names.get(k.lower(), k) for k in u) for u in uniques))

    @staticmethod
    def _with_charset(col: ColumnDef, table_charset: str | None) -> ColumnDef:
        if col.type_name in CHARACTER_TYPES and col.type_name != "JSON" and col.charset is None:
            return replace(col, charset=table_charset)
        return col

    def _create_index(self, tokens: list[Token], db: str | None) -> AppliedDdl:
        if _word(tokens[0]) != "UNIQUE":
            return AppliedDdl("ignored")
        on = next(i for i, t in enumerate(tokens) if _word(t) == "ON")
        tid, j = _read_table_name(tokens, on + 1, db)
        cols = _paren_names(tokens, j)
        table = self.tables.get(tid)
        if table is None:
            return AppliedDdl("ignored")
        new = replace(table, unique_keys=table.unique_keys + (tuple(cols),))
        self.tables[tid] = new
        return AppliedDdl("table", [TableChange("ALTER", tid, new)], [tid.database])

    def _drop_tables(self, tokens: list[Token], db: str | None) -> AppliedDdl:
        tokens = _skip_if_exists(tokens)
        changes = []
        for tid in _table_list(tokens, db):
            dropped = self.tables.pop(tid, None)
            if dropped is not None:
                changes.append(TableChange("DROP", tid, dropped))
        dbs = sorted({c.id.database for c in changes}) or ([db] if db else [])
        return AppliedDdl("table", changes, dbs)

    def _rename_tables(self, tokens: list[Token], db: str | None) -> AppliedDdl:
        changes = []
        i = 0
        while i < len(tokens):
            old, i = _read_table_name(tokens, i, db)
            if i >= len(tokens) or _word(tokens[i]) != "TO":
                raise ValueError("RENAME TABLE expects `old TO new`")
            new, i = _read_table_name(tokens, i + 1, db)
            table = self.tables.pop(old, None)
            if table is not None:
                table = replace(table, id=new)
                self.tables[new] = table
                changes.append(TableChange("ALTER", new, table, previous_id=old))
            if i < len(tokens) and tokens[i].token_type == TokenType.COMMA:
                i += 1
        return AppliedDdl("table", changes, sorted({c.id.database for c in changes}))

    # -- ALTER TABLE ----------------------------------------------------------------------------

    def _alter_table(self, sql: str, tokens: list[Token], i: int, db: str | None) -> AppliedDdl:
        if i < len(tokens) and _word(tokens[i]) == "IF":
            i += 2
        tid, i = _read_table_name(tokens, i, db)
        table = self.tables.get(tid)
        actions = _split_actions(tokens, i)
        if table is None:
            # A table this model never saw: nothing to change (its definition arrives when it is captured).
            return AppliedDdl("table", [], [tid.database])
        new_id = tid
        for action in actions:
            table, renamed = self._alter_action(sql, table, action)
            if renamed is not None:
                new_id = renamed
                table = replace(table, id=renamed)
        if new_id != tid:
            del self.tables[tid]
        self.tables[new_id] = table
        return AppliedDdl("table", [TableChange("ALTER", new_id, table, previous_id=tid if new_id != tid else None)],
                          [new_id.database])

    def _alter_action(self, sql: str, table: TableDef, toks: list[Token]) -> tuple[TableDef, TableId | None]:
        w = [_word(t) for t in toks]
        if not toks:
            return table, None
        head = w[0]
        if head == "ADD":
            j = 1
            if j < len(toks) and w[j] == "COLUMN":
                j += 1
            if j < len(toks) and w[j] == "IF":
                j += 3
            if j < len(toks) and w[j] == "CONSTRAINT":
                j += 1
                if j < len(toks) and w[j] not in ("PRIMARY", "UNIQUE", "FOREIGN", "CHECK"):
                    j += 1
            if j < len(toks) and w[j] == "PRIMARY":
                cols = _paren_names(toks, j)
                cols = [table.column(c).name if table.column(c) else c for c in cols]
                columns = [replace(c, optional=False) if c.name in cols else c for c in table.columns]
                return replace(table.renumbered(columns), primary_key=tuple(cols)), None
            if j < len(toks) and w[j] == "UNIQUE":
                cols = _paren_names(toks, j)
                return replace(table, unique_keys=table.unique_keys + (tuple(cols),)), None
            if j < len(toks) and w[j] in ("INDEX", "KEY", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK", "PERIOD", "SYSTEM",
                                          "PARTITION"):
                return table, None
            if j < len(toks) and toks[j].token_type == TokenType.L_PAREN:
                defs = _text(sql, toks[j + 1], toks[-2])
                columns = list(table.columns)
                for cd in _parse_column_defs(defs):
                    col, _ = column_from_sqlglot(cd)
                    columns = [c for c in columns if c.name.lower() != col.name.lower()]
                    columns.append(self._with_charset(col, table.charset))
                return table.renumbered(columns), None
            definition, position = _strip_position(toks[j:])
            col, flags = self._column(sql, definition, table)
            if table.column(col.name) is not None and "IF" in w[:4]:
                return table, None
            columns = [c for c in table.columns]
            columns.insert(_insert_index(columns, position, table), col)
            new = table.renumbered(columns)
            if flags["primary"]:
                new = replace(new, primary_key=(col.name,))
            if flags["unique"]:
                new = replace(new, unique_keys=new.unique_keys + ((col.name,),))
            return new, None
        if head == "DROP":
            j = 1
            if j < len(toks) and w[j] == "PRIMARY":
                return replace(table, primary_key=()), None
            if j < len(toks) and w[j] in ("INDEX", "KEY", "FOREIGN", "CONSTRAINT", "CHECK", "PARTITION", "PERIOD", "SYSTEM"):
                return table, None
            if j < len(toks) and w[j] == "COLUMN":
                j += 1
            if j < len(toks) and w[j] == "IF":
                j += 2
            name = _ident(toks[j])
            if table.column(name) is None:
                if "IF" in w[:3]:
                    return table, None
                raise ValueError(f"DROP COLUMN {name!r}: table {table.id} has no such column")
            return table.renumbered([c for c in table.columns if c.name.lower() != name.lower()]), None
        if head in ("MODIFY", "CHANGE"):
            j = 1
            if j < len(toks) and w[j] == "COLUMN":
                j += 1
            if j < len(toks) and w[j] == "IF":
                j += 2
            old_name = _ident(toks[j])
            if head == "CHANGE":
                j += 1
            definition, position = _strip_position(toks[j:])
            old = table.column(old_name)
            if old is None:
                if "IF" in w[:3]:
                    return table, None
                raise ValueError(f"{head} COLUMN {old_name!r}: table {table.id} has no such column")
            col, flags = self._column(sql, definition, table)
            columns = [c for c in table.columns]
            index = next(k for k, c in enumerate(columns) if c.name.lower() == old_name.lower())
            if position is None:
                columns[index] = col
            else:
                del columns[index]
                columns.insert(_insert_index(columns, position, table), col)
            pk = tuple(col.name if k.lower() == old_name.lower() else k for k in table.primary_key)
            uks = tuple(tuple(col.name if k.lower() == old_name.lower() else k for k in u) for u in table.unique_keys)
            new = replace(table.renumbered(columns), primary_key=pk, unique_keys=uks)
            if col.name in pk:
                new = new.renumbered([replace(c, optional=False) if c.name == col.name else c for c in new.columns])
            if flags["primary"]:
                new = replace(new, primary_key=(col.name,))
            return new, None
        if head == "RENAME":
            j = 1
            if j < len(toks) and w[j] == "COLUMN":
                old, new_name = _ident(toks[j + 1]), _ident(toks[j + 3])
                col = table.column(old)
                if col is None:
                    raise ValueError(f"RENAME COLUMN {old!r}: table {table.id} has no such column")
                columns = [replace(c, name=new_name) if c is col else c for c in table.columns]
                pk = tuple(new_name if k.lower() == old.lower() else k for k in table.primary_key)
                return replace(table.renumbered(columns), primary_key=pk), None
            if j < len(toks) and w[j] in ("INDEX", "KEY"):
                return table, None
            if j < len(toks) and w[j] in ("TO", "AS"):
                j += 1
            new_id, _ = _read_table_name(toks, j, table.id.database)
            return table, new_id
        if head == "ALTER":
            j = 1
            if j < len(toks) and w[j] == "COLUMN":
                j += 1
            name = _ident(toks[j])
            col = table.column(name)
            if col is None:
                raise ValueError(f"ALTER COLUMN {name!r}: table {table.id} has no such column")
            op = w[j + 1:j + 3]
            if op[:2] == ["SET", "DEFAULT"]:
                value = _text(sql, toks[j + 3], toks[-1])
                if value.startswith("(") and value.endswith(")"):
                    value = value[1:-1]
                default = _default_text(_parse_expression(value))
                col = replace(col, has_default=True, default=default)
            elif op[:2] == ["DROP", "DEFAULT"]:
                col = replace(col, has_default=False, default=None)
            columns = [col if c.name == col.name else c for c in table.columns]
            return table.renumbered(columns), None
        if head == "CONVERT":
            charset = _charset_option(toks[2:])
            columns = [replace(c, charset=charset) if c.type_name in CHARACTER_TYPES and c.type_name != "JSON" else c
                       for c in table.columns]
            return replace(table.renumbered(columns), charset=charset), None
        if head in ("DEFAULT", "CHARACTER", "CHARSET"):
            charset = _charset_option(toks)
            return (replace(table, charset=charset) if charset else table), None
        if head == "COMMENT":
            k = 2 if len(toks) > 2 and toks[1].token_type == TokenType.EQ else 1
            return replace(table, comment=toks[k].text), None
        if head in _IGNORED_ALTER_OPTIONS or (len(toks) > 1 and toks[1].token_type == TokenType.EQ):
            return table, None
        raise ValueError(f"unsupported ALTER TABLE action {' '.join(t.text for t in toks[:3])!r}")

    def _column(self, sql: str, definition: list[Token], table: TableDef) -> tuple[ColumnDef, dict[str, bool]]:
        text = _text(sql, definition[0], definition[-1])
        cds = _parse_column_defs(text)
        if len(cds) != 1:
            raise ValueError(f"expected one column definition in {text!r}")
        col, flags = column_from_sqlglot(cds[0])
        return self._with_charset(col, table.charset), flags


_IGNORED_ALTER_OPTIONS = frozenset({
    "ENGINE", "AUTO_INCREMENT", "ROW_FORMAT", "ALGORITHM", "LOCK", "FORCE", "ORDER", "KEY_BLOCK_SIZE", "COLLATE",
    "PARTITION", "REMOVE", "COALESCE", "REORGANIZE", "ANALYZE", "CHECK", "OPTIMIZE", "REBUILD", "REPAIR", "TRUNCATE",
    "DISCARD", "IMPORT", "ENABLE", "DISABLE", "STATS_PERSISTENT", "STATS_AUTO_RECALC", "STATS_SAMPLE_PAGES",
    "PACK_KEYS", "CHECKSUM", "DELAY_KEY_WRITE", "AVG_ROW_LENGTH", "MAX_ROWS", "MIN_ROWS", "INSERT_METHOD",
    "TABLESPACE", "COMPRESSION", "ENCRYPTION", "PAGE_CHECKSUM", "TRANSACTIONAL", "WITH", "WITHOUT", "SECONDARY_ENGINE",
    "ADD_PERIOD", "NOWAIT", "WAIT",
})


# --------------------------------------------------------------------------------- token helpers


def _text(sql: str, first: Token, last: Token) -> str:
    begin, end = first.start, last.end + 1
    while begin > 0 and sql[begin - 1] in "`'\"":
        begin -= 1
    while end < len(sql) and sql[end] in "`'\"":
        end += 1
    return sql[begin:end]


def _parse_column_defs(text: str) -> list[exp.ColumnDef]:
    tree = _parse_one(f"CREATE TABLE _cdc_ ({text})")
    schema = tree.this
    if not isinstance(schema, exp.Schema):
        raise ValueError(f"cannot read column definition {text!r}")
    return [e for e in schema.expressions if isinstance(e, exp.ColumnDef)]


def _parse_expression(text: str) -> exp.Expression:
    try:
        return sqlglot.parse_one(text, read=_DIALECT)
    except SqlglotError:
        return exp.Literal.string(text)


def _skip_if_exists(tokens: list[Token]) -> list[Token]:
    if len(tokens) >= 2 and _word(tokens[0]) == "IF":
        return tokens[3:] if _word(tokens[1]) == "NOT" else tokens[2:]
    return tokens


def _read_table_name(tokens: list[Token], i: int, db: str | None) -> tuple[TableId, int]:
    """Read ``name`` or ``db.name`` at ``i``; return it and the index after it."""
    first = _ident(tokens[i])
    if i + 2 < len(tokens) and tokens[i + 1].token_type == TokenType.DOT:
        return TableId(first, _ident(tokens[i + 2])), i + 3
    if db is None:
        raise ValueError(f"table {first!r} has no database and no database is selected")
    return TableId(db, first), i + 1


def _table_list(tokens: list[Token], db: str | None) -> list[TableId]:
    out = []
    i = 0
    while i < len(tokens):
        if _word(tokens[i]) in ("RESTRICT", "CASCADE", "WAIT", "NOWAIT"):
            break
        tid, i = _read_table_name(tokens, i, db)
        out.append(tid)
        if i < len(tokens) and tokens[i].token_type == TokenType.COMMA:
            i += 1
        else:
            break
    return out


def _paren_names(tokens: list[Token], i: int) -> list[str]:
    """The column names inside the first parenthesis at or after ``i`` (prefix lengths and ASC/DESC dropped)."""
    while tokens[i].token_type != TokenType.L_PAREN:
        i += 1
    names, depth, expect = [], 0, True
    for tok in tokens[i:]:
        if tok.token_type == TokenType.L_PAREN:
            depth += 1
            continue
        if tok.token_type == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                break
            continue
        if depth == 1:
            if tok.token_type == TokenType.COMMA:
                expect = True
            elif expect:
                names.append(_ident(tok))
                expect = False
    return names


def _split_actions(tokens: list[Token], i: int) -> list[list[Token]]:
    """ALTER TABLE's actions: the tokens after the table name, split at top-level commas."""
    actions: list[list[Token]] = [[]]
    depth = 0
    for tok in tokens[i:]:
        if tok.token_type == TokenType.L_PAREN:
            depth += 1
        elif tok.token_type == TokenType.R_PAREN:
            depth -= 1
        if tok.token_type == TokenType.COMMA and depth == 0:
            actions.append([])
        else:
            actions[-1].append(tok)
    return [a for a in actions if a]


def _strip_position(toks: list[Token]) -> tuple[list[Token], tuple[str, str | None] | None]:
    """Split a trailing ``FIRST`` or ``AFTER col`` off a column definition."""
    if toks and _word(toks[-1]) == "FIRST":
        return toks[:-1], ("FIRST", None)
    if len(toks) >= 2 and _word(toks[-2]) == "AFTER":
        return toks[:-2], ("AFTER", _ident(toks[-1]))
    return toks, None


def _insert_index(columns: list[ColumnDef], position: tuple[str, str | None] | None, table: TableDef) -> int:
    if position is None:
        return len(columns)
    if position[0] == "FIRST":
        return 0
    after = position[1] or ""
    for k, c in enumerate(columns):
        if c.name.lower() == after.lower():
            return k + 1
    raise ValueError(f"AFTER {after!r}: table {table.id} has no such column")


def _charset_option(tokens: list[Token]) -> str | None:
    """The value of a ``[DEFAULT] CHARACTER SET|CHARSET [=] x`` (or ``COLLATE x``) option in ``tokens``."""
    for k, tok in enumerate(tokens):
        word = _word(tok)
        j = None
        if word == "CHARSET" or (word == "SET" and k > 0 and _word(tokens[k - 1]) == "CHARACTER"):
            j = k + 1
        if j is not None:
            if j < len(tokens) and tokens[j].token_type == TokenType.EQ:
                j += 1
            if j < len(tokens):
                return tokens[j].text.lower()
    for k, tok in enumerate(tokens):
        if _word(tok) == "COLLATE":
            j = k + 1
            if j < len(tokens) and tokens[j].token_type == TokenType.EQ:
                j += 1
            if j < len(tokens):
                return tokens[j].text.lower().split("_")[0]
    return None


def _table_charset(props: exp.Expression | None) -> str | None:
    if props is None:
        return None
    for p in props.expressions:
        if isinstance(p, exp.CharacterSetProperty):
            return p.this.name.lower()
    for p in props.expressions:
        if isinstance(p, exp.CollateProperty):
            return p.this.name.lower().split("_")[0]
    return None


def _table_id(table: exp.Expression, db: str | None) -> TableId:
    if not isinstance(table, exp.Table):
        raise ValueError(f"expected a table name, got {table.sql()!r}")
    database = table.db or db
    if not database:
        raise ValueError(f"table {table.name!r} has no database and no database is selected")
    return TableId(database, table.name)


def _constraint(item: exp.Expression) -> tuple[str, list[str]]:
    """Classify a table-level constraint: ("primary"|"unique"|"other", column names)."""
    node = item
    if isinstance(node, exp.Constraint):
        node = node.expressions[0] if node.expressions else node
    if isinstance(node, exp.PrimaryKey):
        return "primary", [_key_part_name(e) for e in node.expressions]
    if isinstance(node, exp.UniqueColumnConstraint):
        schema = node.this
        cols = schema.expressions if isinstance(schema, exp.Schema) else []
        return "unique", [_key_part_name(e) for e in cols]
    if isinstance(node, exp.IndexColumnConstraint) and str(node.args.get("kind") or "").upper() == "UNIQUE":
        return "unique", [_key_part_name(e) for e in node.expressions]
    return "other", []


def _key_part_name(e: exp.Expression) -> str:
    while isinstance(e, (exp.Ordered, exp.Anonymous)) and not isinstance(e, exp.Column):
        if isinstance(e, exp.Anonymous):  # col(10): a prefix length
            return str(e.this)
        e = e.this
    return e.name


def _mentioned_tables(tokens: list[Token], db: str | None) -> list[TableId]:
    """Best effort: the table names right after TABLE / TABLES / ON in a statement."""
    out = []
    for k, tok in enumerate(tokens):
        if _word(tok) in ("TABLE", "TABLES") and k + 1 < len(tokens):
            j = k + 1
            if _word(tokens[j]) == "IF":
                j += 3 if j + 1 < len(tokens) and _word(tokens[j + 1]) == "NOT" else 2
            try:
                tid, _ = _read_table_name(tokens, j, db)
            except (ValueError, IndexError):
                continue
            out.append(tid)
    return out


def iter_table_ddl(model: SchemaModel) -> Iterator[str]:
    """Nothing but a hook for tests: the ids of the model's tables in order."""
    for tid in sorted(model.tables):
        yield str(tid)
