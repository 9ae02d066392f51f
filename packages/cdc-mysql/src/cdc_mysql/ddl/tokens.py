"""Statements and tokens: sqlglot's MySQL tokenizer, script splitting, and reading names from tokens."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token, TokenType

from cdc_mysql.ddl.errors import UnparseableDdl
from cdc_mysql.model import ColumnDef, TableDef, TableId


class DdlDialect(MySQL):
    """sqlglot's MySQL dialect, reading unknown type names (POINT, MULTIPOLYGON, ...) as user-defined types."""

    SUPPORTS_USER_DEFINED_TYPES = True

    class Tokenizer(MySQL.Tokenizer):
        """MySQL's tokenizer, with RENAME a statement like any other (not an opaque command)."""

        COMMANDS = MySQL.Tokenizer.COMMANDS - {TokenType.RENAME}

    class Parser(MySQL.Parser):
        """MySQL's parser, accepting ``FLOAT UNSIGNED`` (read as sqlglot's unsigned DOUBLE; the declared type says FLOAT)."""

        SIGNED_TO_UNSIGNED_TYPE_TOKEN = {**MySQL.Parser.SIGNED_TO_UNSIGNED_TYPE_TOKEN, TokenType.FLOAT: TokenType.UDOUBLE}


DIALECT = DdlDialect()


@dataclass(frozen=True)
class Statement:
    """One statement of a script, with where it starts (1-based line and column)."""

    text: str
    line: int
    col: int


def split_statements(script: str) -> list[Statement]:
    """Split a script at top-level semicolons (quotes and comments respected)."""
    try:
        tokens = DIALECT.tokenize(script)
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


def tokenize(sql: str) -> list[Token]:
    """The tokens of a statement (UnparseableDdl if sqlglot cannot tokenize it)."""
    try:
        return DIALECT.tokenize(sql)
    except SqlglotError as e:
        raise UnparseableDdl(sql, f"cannot tokenize: {e}") from None


def token_word(tok: Token) -> str:
    """An unquoted token's first word, upper-case (multi-word tokens such as ``PRIMARY KEY`` give ``PRIMARY``)."""
    if tok.token_type in (TokenType.IDENTIFIER, TokenType.STRING) or not tok.text:
        return ""
    return tok.text.split()[0].upper()


def token_ident(tok: Token) -> str:
    """An identifier token's name (quotes already removed by the tokenizer)."""
    return tok.text


def source_text(sql: str, first: Token, last: Token) -> str:
    """The statement text from ``first`` to ``last``, quotes around them included."""
    begin, end = first.start, last.end + 1
    while begin > 0 and sql[begin - 1] in "`'\"":
        begin -= 1
    while end < len(sql) and sql[end] in "`'\"":
        end += 1
    return sql[begin:end]


def skip_if_exists(tokens: list[Token]) -> list[Token]:
    """The tokens after a leading ``IF [NOT] EXISTS``."""
    if len(tokens) >= 2 and token_word(tokens[0]) == "IF":
        return tokens[3:] if token_word(tokens[1]) == "NOT" else tokens[2:]
    return tokens


def read_table_name(tokens: list[Token], i: int, db: str | None) -> tuple[TableId, int]:
    """Read ``name`` or ``db.name`` at ``i``; return it and the index after it."""
    first = token_ident(tokens[i])
    if i + 2 < len(tokens) and tokens[i + 1].token_type == TokenType.DOT:
        return TableId(first, token_ident(tokens[i + 2])), i + 3
    if db is None:
        raise ValueError(f"table {first!r} has no database and no database is selected")
    return TableId(db, first), i + 1


def table_list(tokens: list[Token], db: str | None) -> list[TableId]:
    """The comma-separated table names at the start of ``tokens``."""
    out = []
    i = 0
    while i < len(tokens):
        if token_word(tokens[i]) in ("RESTRICT", "CASCADE", "WAIT", "NOWAIT"):
            break
        tid, i = read_table_name(tokens, i, db)
        out.append(tid)
        if i < len(tokens) and tokens[i].token_type == TokenType.COMMA:
            i += 1
        else:
            break
    return out


def paren_names(tokens: list[Token], i: int) -> list[str]:
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
                names.append(token_ident(tok))
                expect = False
    return names


def split_actions(tokens: list[Token], i: int) -> list[list[Token]]:
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


def strip_position(toks: list[Token]) -> tuple[list[Token], tuple[str, str | None] | None]:
    """Split a trailing ``FIRST`` or ``AFTER col`` off a column definition."""
    if toks and token_word(toks[-1]) == "FIRST":
        return toks[:-1], ("FIRST", None)
    if len(toks) >= 2 and token_word(toks[-2]) == "AFTER":
        return toks[:-2], ("AFTER", token_ident(toks[-1]))
    return toks, None


def insert_index(columns: list[ColumnDef], position: tuple[str, str | None] | None, table: TableDef) -> int:
    """Where a column goes among ``columns`` for ``FIRST`` / ``AFTER col`` (the end if no position)."""
    if position is None:
        return len(columns)
    if position[0] == "FIRST":
        return 0
    after = position[1] or ""
    for k, c in enumerate(columns):
        if c.name.lower() == after.lower():
            return k + 1
    raise ValueError(f"AFTER {after!r}: table {table.id} has no such column")


def charset_option(tokens: list[Token]) -> str | None:
    """The value of a ``[DEFAULT] CHARACTER SET|CHARSET [=] x`` (or ``COLLATE x``) option in ``tokens``."""
    for k, tok in enumerate(tokens):
        word = token_word(tok)
        j = None
        if word == "CHARSET" or (word == "SET" and k > 0 and token_word(tokens[k - 1]) == "CHARACTER"):
            j = k + 1
        if j is not None:
            if j < len(tokens) and tokens[j].token_type == TokenType.EQ:
                j += 1
            if j < len(tokens):
                return tokens[j].text.lower()
    for k, tok in enumerate(tokens):
        if token_word(tok) == "COLLATE":
            j = k + 1
            if j < len(tokens) and tokens[j].token_type == TokenType.EQ:
                j += 1
            if j < len(tokens):
                return tokens[j].text.lower().split("_")[0]
    return None


def mentioned_tables(tokens: list[Token], db: str | None) -> list[TableId]:
    """Best effort: the table names right after TABLE / TABLES / ON in a statement."""
    out = []
    for k, tok in enumerate(tokens):
        if token_word(tok) in ("TABLE", "TABLES") and k + 1 < len(tokens):
            j = k + 1
            if token_word(tokens[j]) == "IF":
                j += 3 if j + 1 < len(tokens) and token_word(tokens[j + 1]) == "NOT" else 2
            try:
                tid, _ = read_table_name(tokens, j, db)
            except (ValueError, IndexError):
                continue
            out.append(tid)
    return out
