"""The table model DDL changes, statement by statement: CREATE, ALTER, DROP, RENAME, TRUNCATE, databases."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from cdc_mysql.ddl.alter import alter_action, is_partitioning, without_partition_options
from cdc_mysql.ddl.columns import column_from_sqlglot, table_charset_of, table_constraint, table_id_of, with_charset
from cdc_mysql.ddl.errors import UnparseableDdl
from cdc_mysql.ddl.parsing import parse_one
from cdc_mysql.ddl.table_options import CreateTableParts, create_table_parts
from cdc_mysql.ddl.tokens import (
    charset_option, mentioned_tables, paren_names, read_table_name, skip_if_exists, source_text, split_actions,
    table_list, token_ident, token_word, tokenize,
)
from cdc_mysql.model import ColumnDef, TableChange, TableDef, TableId


@dataclass
class AppliedDdl:
    """What one statement did: the table changes, the databases it touched, and its kind."""

    kind: str  # "table", "database", "truncate", "use", "ignored"
    changes: list[TableChange] = field(default_factory=list)
    databases: list[str] = field(default_factory=list)
    truncated: list[TableId] = field(default_factory=list)
    #: Statements Debezium records and sends per table instead of the whole one (``DROP TABLE a, b``).
    statements: dict[TableId, str] = field(default_factory=dict)


def quote_name(name: str) -> str:
    """A backquoted identifier."""
    return "`" + name.replace("`", "``") + "`"


class SchemaModel:
    """Tables and database charsets, changed statement by statement."""

    def __init__(self, server_charset: str = "utf8mb4", keep_comments: bool = False):
        self.tables: dict[TableId, TableDef] = {}
        self.database_charsets: dict[str, str] = {}
        self.server_charset = server_charset
        #: ``include.schema.comments``: keep table and column COMMENTs (Debezium's parser skips them by default).
        self.keep_comments = keep_comments

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
        other = SchemaModel(self.server_charset, self.keep_comments)
        other.tables = dict(self.tables)
        other.database_charsets = dict(self.database_charsets)
        return other

    # -- statements ---------------------------------------------------------------------------

    def apply(self, sql: str, database: str | None) -> AppliedDdl:
        """Apply one statement run with ``database`` as the current database; UnparseableDdl if not understood."""
        tokens = [t for t in tokenize(sql)]
        if not tokens:
            return AppliedDdl("ignored")
        words = [token_word(t) for t in tokens[:6]]
        try:
            applied = self._dispatch(sql, tokens, words, database)
            return applied if self.keep_comments else self._without_comments(applied)
        except UnparseableDdl as e:  # a part of the statement (a column definition) did not parse
            raise UnparseableDdl(sql, e.reason, e.tables or mentioned_tables(tokens, database)) from None
        except (ValueError, KeyError, IndexError, AttributeError, TypeError) as e:
            raise UnparseableDdl(sql, str(e) or type(e).__name__, mentioned_tables(tokens, database)) from None

    def _without_comments(self, applied: AppliedDdl) -> AppliedDdl:
        """The statement's tables without COMMENTs (include.schema.comments=false), in the model too."""
        changes = []
        for change in applied.changes:
            table = change.table
            if table is not None and (table.comment is not None or any(c.comment is not None for c in table.columns)):
                table = replace(table, comment=None, columns=tuple(replace(c, comment=None) for c in table.columns))
                if self.tables.get(change.id) is change.table:
                    self.tables[change.id] = table
                change = change._replace(table=table)
            changes.append(change)
        applied.changes = changes
        return applied

    def _dispatch(self, sql: str, tokens: list[Token], words: list[str], db: str | None) -> AppliedDdl:
        first = words[0]
        rest = [w for w in words[1:]]
        if first == "SET":  # the snapshot's SET character_set_server=...: later tables' default charset
            for k in range(1, len(tokens) - 2):
                if tokens[k].text.lower() == "character_set_server" and tokens[k + 1].token_type == TokenType.EQ:
                    self.server_charset = tokens[k + 2].text.strip("'").lower()
            return AppliedDdl("ignored")
        if first == "USE" and len(tokens) > 1:
            return AppliedDdl("use", databases=[token_ident(tokens[1])])
        if first == "CREATE":
            i = 1
            while i < len(tokens) and token_word(tokens[i]) in ("OR", "REPLACE", "TEMPORARY"):
                i += 1
            if i < len(tokens) and token_word(tokens[i]) == "TABLE":
                if "TEMPORARY" in words[:i]:
                    return AppliedDdl("ignored")
                return self._create_table(sql, db)
            if i < len(tokens) and token_word(tokens[i]) in ("DATABASE", "SCHEMA"):
                return self._create_database(tokens[i + 1:])
            if i < len(tokens) and token_word(tokens[i]) in ("UNIQUE", "INDEX", "FULLTEXT", "SPATIAL"):
                return self._create_index(tokens[i:], db)
            return AppliedDdl("ignored")
        if first == "ALTER":
            i = 1
            while i < len(tokens) and token_word(tokens[i]) in ("ONLINE", "IGNORE", "OFFLINE"):
                i += 1
            if i < len(tokens) and token_word(tokens[i]) == "TABLE":
                return self._alter_table(sql, tokens, i + 1, db)
            if i < len(tokens) and token_word(tokens[i]) in ("DATABASE", "SCHEMA"):
                return self._alter_database(tokens[i + 1:], db)
            return AppliedDdl("ignored")
        if first == "DROP":
            i = 1
            temporary = False
            while i < len(tokens) and token_word(tokens[i]) == "TEMPORARY":
                temporary, i = True, i + 1
            if i < len(tokens) and token_word(tokens[i]) == "TABLE":
                return AppliedDdl("ignored") if temporary else self._drop_tables(sql, tokens[i + 1:], db)
            if i < len(tokens) and token_word(tokens[i]) in ("DATABASE", "SCHEMA"):
                return self._drop_database(tokens[i + 1:])
            if i < len(tokens) and token_word(tokens[i]) == "INDEX":
                return AppliedDdl("ignored")
            return AppliedDdl("ignored")
        if first == "RENAME" and rest and rest[0] in ("TABLE", "TABLES"):
            return self._rename_tables(sql, tokens[2:], db)
        if first == "TRUNCATE":
            i = 2 if rest and rest[0] == "TABLE" else 1
            names = table_list(tokens[i:], db)
            return AppliedDdl("truncate", databases=sorted({t.database for t in names}), truncated=names)
        return AppliedDdl("ignored")

    # -- databases ----------------------------------------------------------------------------

    def _create_database(self, tokens: list[Token]) -> AppliedDdl:
        tokens = skip_if_exists(tokens)
        name = token_ident(tokens[0])
        charset = charset_option(tokens[1:]) or self.server_charset
        self.database_charsets.setdefault(name, charset)
        return AppliedDdl("database", databases=[name])

    def _alter_database(self, tokens: list[Token], db: str | None) -> AppliedDdl:
        name = db
        if tokens and token_word(tokens[0]) not in ("DEFAULT", "CHARACTER", "CHARSET", "COLLATE", "READ", "COMMENT"):
            name, tokens = token_ident(tokens[0]), tokens[1:]
        charset = charset_option(tokens)
        if name and charset:
            self.database_charsets[name] = charset
        return AppliedDdl("database", databases=[name] if name else [])

    def _drop_database(self, tokens: list[Token]) -> AppliedDdl:
        tokens = skip_if_exists(tokens)
        name = token_ident(tokens[0])
        changes = [TableChange("DROP", tid, self.tables[tid]) for tid in sorted(self.tables) if tid.database == name]
        for ch in changes:
            del self.tables[ch.id]
        self.database_charsets.pop(name, None)
        return AppliedDdl("database", changes, [name])

    # -- tables -------------------------------------------------------------------------------

    def _create_table(self, sql: str, db: str | None) -> AppliedDdl:
        parts = create_table_parts(sql, tokenize(sql))
        tree = parse_one(parts.sql if parts is not None else sql)
        if not isinstance(tree, exp.Create):
            raise UnparseableDdl(sql, "not a CREATE TABLE statement sqlglot understands", mentioned_tables(tokenize(sql), db))
        schema = tree.this
        table_expr = schema.this if isinstance(schema, exp.Schema) else schema
        tid = table_id_of(table_expr, db)
        if tree.args.get("exists") and tid in self.tables:
            return AppliedDdl("table", databases=[tid.database])
        props = tree.args.get("properties")
        like = props.find(exp.LikeProperty) if props is not None else None
        if like is not None:
            source = self.tables.get(table_id_of(like.this, db))
            if source is None:
                raise UnparseableDdl(sql, f"CREATE TABLE ... LIKE names unknown table {table_id_of(like.this, db)}", [tid])
            table = replace(source, id=tid)
        elif tree.args.get("expression") is not None:
            raise UnparseableDdl(sql, "CREATE TABLE ... AS SELECT: the columns come from the query", [tid])
        elif not isinstance(schema, exp.Schema):
            raise UnparseableDdl(sql, "CREATE TABLE without column definitions", [tid])
        else:
            table = self._table_from_schema(tid, schema, props, parts)
        self.tables[tid] = table
        return AppliedDdl("table", [TableChange("CREATE", tid, table)], [tid.database])

    def _table_from_schema(self, tid: TableId, schema: exp.Schema, props: exp.Expression | None,
                           parts: CreateTableParts | None) -> TableDef:
        columns: list[ColumnDef] = []
        pk: list[str] = []
        uniques: list[tuple[str, ...]] = []
        declarations = parts.declarations if parts is not None else {}
        charset = parts.charset if parts is not None else table_charset_of(props)
        comment = parts.comment if parts is not None else None
        if props is not None and parts is None:
            for p in props.expressions:
                if isinstance(p, exp.SchemaCommentProperty):
                    comment = str(p.this.this) if isinstance(p.this, exp.Literal) else p.this.sql()
        for item in schema.expressions:
            if isinstance(item, exp.ColumnDef):
                col, flags = column_from_sqlglot(item, len(columns) + 1, declarations.get(item.this.name.lower()))
                columns.append(col)
                if flags["primary"]:
                    pk = [col.name]
                if flags["unique"]:
                    uniques.append((col.name,))
            else:
                kind, names = table_constraint(item)
                if kind == "primary":
                    pk = names
                elif kind == "unique":
                    uniques.append(tuple(names))
        table_charset = charset or self.charset_of(tid.database)
        columns = [with_charset(c, table_charset) for c in columns]
        pk_lower = {k.lower() for k in pk}
        columns = [replace(c, optional=False) if c.name.lower() in pk_lower else c for c in columns]
        names = {c.name.lower(): c.name for c in columns}
        pk = [names.get(k.lower(), k) for k in pk]
        return TableDef(tid, tuple(columns), tuple(pk), table_charset, comment,
                        tuple(tuple(names.get(k.lower(), k) for k in u) for u in uniques))

    def _create_index(self, tokens: list[Token], db: str | None) -> AppliedDdl:
        if token_word(tokens[0]) != "UNIQUE":
            return AppliedDdl("ignored")
        on = next(i for i, t in enumerate(tokens) if token_word(t) == "ON")
        tid, j = read_table_name(tokens, on + 1, db)
        cols = paren_names(tokens, j)
        table = self.tables.get(tid)
        if table is None or table.primary_key:  # Debezium's CreateUniqueIndexParserListener: only a keyless table changes
            return AppliedDdl("ignored")
        new = replace(table, unique_keys=table.unique_keys + (tuple(cols),))
        self.tables[tid] = new
        return AppliedDdl("table", [TableChange("ALTER", tid, new)], [tid.database])

    def _drop_tables(self, sql: str, tokens: list[Token], db: str | None) -> AppliedDdl:
        """DROP TABLE: a DROP change per table named, known or not (DropTableParserListener signals each).

        Each table gets its own statement, as Debezium writes it: the text before the table list,
        the table's qualified name and RESTRICT/CASCADE (MariaDB's ``/* generated by server */`` goes).
        """
        tokens = skip_if_exists(tokens)
        start = tokens[0].start if tokens else len(sql)
        while start > 0 and sql[start - 1] == "`":
            start -= 1
        prefix = sql[:start]
        drop_type = next((" " + token_word(t) for t in tokens if token_word(t) in ("RESTRICT", "CASCADE")), "")
        changes, statements = [], {}
        for tid in table_list(tokens, db):
            changes.append(TableChange("DROP", tid, self.tables.pop(tid, None)))
            statements[tid] = f"{prefix}{quote_name(tid.database)}.{quote_name(tid.table)}{drop_type}"
        dbs = sorted({c.id.database for c in changes}) or ([db] if db else [])
        return AppliedDdl("table", changes, dbs, statements=statements)

    def _rename_tables(self, sql: str, tokens: list[Token], db: str | None) -> AppliedDdl:
        """RENAME TABLE: an ALTER per pair, each with its own statement (``RENAME TABLE a TO b``), as Debezium signals them."""
        changes, statements = [], {}
        i = 0
        while i < len(tokens):
            start = i
            old, i = read_table_name(tokens, i, db)
            if i >= len(tokens) or token_word(tokens[i]) != "TO":
                raise ValueError("RENAME TABLE expects `old TO new`")
            new, i = read_table_name(tokens, i + 1, db)
            table = self.tables.pop(old, None)
            if table is not None:
                table = replace(table, id=new)
                self.tables[new] = table
                changes.append(TableChange("ALTER", new, table, previous_id=old))
                statements[new] = "RENAME TABLE " + source_text(sql, tokens[start], tokens[i - 1])
            if i < len(tokens) and tokens[i].token_type == TokenType.COMMA:
                i += 1
        return AppliedDdl("table", changes, sorted({c.id.database for c in changes}), statements=statements)

    # -- ALTER TABLE ----------------------------------------------------------------------------

    def _alter_table(self, sql: str, tokens: list[Token], i: int, db: str | None) -> AppliedDdl:
        if i < len(tokens) and token_word(tokens[i]) == "IF":
            i += 2
        tid, i = read_table_name(tokens, i, db)
        table = self.tables.get(tid)
        actions = split_actions(without_partition_options(tokens, i), i)
        if table is None:
            # A table this model never saw: nothing to change (its definition arrives when it is captured).
            return AppliedDdl("table", [], [tid.database])
        new_id = tid
        for action in actions:
            if is_partitioning(action):
                break
            table, renamed = alter_action(sql, table, action)
            if renamed is not None:
                new_id = renamed
                table = replace(table, id=renamed)
        if new_id != tid:
            del self.tables[tid]
        self.tables[new_id] = table
        return AppliedDdl("table", [TableChange("ALTER", new_id, table, previous_id=tid if new_id != tid else None)],
                          [new_id.database])
