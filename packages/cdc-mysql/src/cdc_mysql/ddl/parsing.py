"""Parsing with sqlglot: constructs its MySQL dialect rejects are rewritten first."""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token, TokenType

from cdc_mysql.ddl.errors import UnparseableDdl
from cdc_mysql.ddl.tokens import DIALECT, token_word, tokenize


def preprocess(sql: str) -> str:
    """Rewrite constructs sqlglot's MySQL dialect rejects into equivalents it reads."""
    tokens = tokenize(sql)
    cuts: list[tuple[int, int, str]] = []  # (start, end, replacement) over the original text
    for i, tok in enumerate(tokens):
        word = token_word(tok)
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if word == "NATIONAL" and nxt is not None and token_word(nxt) in ("CHAR", "CHARACTER", "VARCHAR"):
            cuts.append((tok.start, nxt.start, ""))
        elif word == "NCHAR" and nxt is not None and token_word(nxt) in ("VARCHAR", "VARYING"):
            cuts.append((tok.start, nxt.end + 1, "VARCHAR"))
        elif word == "SRID" and nxt is not None and nxt.token_type == TokenType.NUMBER:
            cuts.append((tok.start, nxt.end + 1, ""))
        elif word == "LONG" and nxt is not None and token_word(nxt) in ("VARCHAR", "VARBINARY"):
            cuts.append((tok.start, nxt.end + 1, "MEDIUMTEXT" if token_word(nxt) == "VARCHAR" else "MEDIUMBLOB"))
        elif word == "CHARACTER" and nxt is not None and token_word(nxt) == "VARYING":
            cuts.append((tok.start, nxt.end + 1, "VARCHAR"))
        elif word == "COMPRESSED":  # MariaDB's column compression: no effect on the row format cdc reads
            end = tokens[i + 2].end + 1 if nxt is not None and nxt.token_type == TokenType.EQ and i + 2 < len(tokens) else tok.end + 1
            cuts.append((tok.start, end, ""))
        elif word == "REF_SYSTEM_ID" and i + 2 < len(tokens) and nxt is not None and nxt.token_type == TokenType.EQ:
            cuts.append((tok.start, tokens[i + 2].end + 1, ""))
        elif word == "PERSISTENT":  # MariaDB's name for STORED generated columns
            cuts.append((tok.start, tok.end + 1, "STORED"))
        elif word == "SERIAL" and [token_word(t) for t in tokens[i + 1:i + 3]] == ["DEFAULT", "VALUE"]:
            cuts.append((tok.start, tokens[i + 2].end + 1, "NOT NULL AUTO_INCREMENT UNIQUE"))
        elif word in ("WITH", "WITHOUT") and [token_word(t) for t in tokens[i + 1:i + 3]] == ["SYSTEM", "VERSIONING"]:
            cuts.append((tok.start, tokens[i + 2].end + 1, ""))
        elif word == "CHAR" and i + 4 < len(tokens) and tokens[i + 1].token_type == TokenType.L_PAREN \
                and token_word(tokens[i + 4]) == "BYTE":  # CHAR(n) BYTE is BINARY(n)
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


def parse_one(sql: str) -> exp.Expression:
    """One statement as sqlglot's tree (UnparseableDdl with sqlglot's first line if it fails)."""
    try:
        return sqlglot.parse_one(preprocess(sql), read=DIALECT)
    except SqlglotError as e:
        raise UnparseableDdl(sql, str(e).splitlines()[0][:200]) from None


def parse_column_defs(text: str) -> list[exp.ColumnDef]:
    """The column definitions of a comma-separated list (parsed as a CREATE TABLE body)."""
    tree = parse_one(f"CREATE TABLE _cdc_ ({text})")
    schema = tree.this
    if not isinstance(schema, exp.Schema):
        raise ValueError(f"cannot read column definition {text!r}")
    return [e for e in schema.expressions if isinstance(e, exp.ColumnDef)]


def parse_expression(text: str) -> exp.Expression:
    """An expression (a DEFAULT value); a string literal of the text if sqlglot cannot read it."""
    try:
        return sqlglot.parse_one(text, read=DIALECT)
    except SqlglotError:
        return exp.Literal.string(text)
