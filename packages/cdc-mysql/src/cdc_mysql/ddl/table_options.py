"""CREATE TABLE's parts read from tokens: the column list, and the table options and partitioning after it.

Only the column list goes to sqlglot. The table options the model keeps (charset, collation,
comment) are read here; the others (ENGINE, UNION=(...), INSERT_METHOD, TABLESPACE, ROW_FORMAT, ...)
and the whole partitioning clause (PARTITION BY ... SUBPARTITION BY ... (PARTITION ...)) do not
change the columns, so sqlglot never sees them: a storage option it does not know can no longer
make a table unreadable.
"""

from __future__ import annotations

from typing import NamedTuple

from sqlglot.tokens import Token, TokenType

from cdc_mysql.ddl.alter import starts_partitioning
from cdc_mysql.ddl.declared import DeclaredType, column_declarations
from cdc_mysql.ddl.tokens import charset_option, token_word


class CreateTableParts(NamedTuple):
    """A CREATE TABLE with a column list: the SQL sqlglot reads, and what the tokens tell."""

    sql: str  # the statement up to the column list's closing parenthesis
    charset: str | None
    comment: str | None
    declarations: dict[str, DeclaredType]  # declared column types, by lower-case column name


def create_table_parts(sql: str, tokens: list[Token]) -> CreateTableParts | None:
    """Split a CREATE TABLE into its column list and options; None if it has no column list or is AS SELECT."""
    k = next((i for i, t in enumerate(tokens) if token_word(t) == "TABLE"), None)
    if k is None:
        return None
    k += 1
    if k < len(tokens) and token_word(tokens[k]) == "IF":
        k += 3
    k += 3 if k + 1 < len(tokens) and tokens[k + 1].token_type == TokenType.DOT else 1
    if k >= len(tokens) or tokens[k].token_type != TokenType.L_PAREN:
        return None
    if k + 1 < len(tokens) and token_word(tokens[k + 1]) == "LIKE":
        return None
    close = _closing(tokens, k)
    if close is None:
        return None
    tail = tokens[close + 1:]
    if any(token_word(t) == "SELECT" for t in tail):
        return None
    options = _before_partitioning(tail)
    return CreateTableParts(sql[:tokens[close].end + 1], charset_option(options), _comment(options),
                            column_declarations(tokens[k + 1:close]))


def _closing(tokens: list[Token], open_index: int) -> int | None:
    depth = 0
    for i in range(open_index, len(tokens)):
        if tokens[i].token_type == TokenType.L_PAREN:
            depth += 1
        elif tokens[i].token_type == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return i
    return None


def _before_partitioning(tail: list[Token]) -> list[Token]:
    """The table options: the tokens before ``PARTITION BY``, parenthesized lists (``UNION=(...)``) left out."""
    out, depth = [], 0
    for i, tok in enumerate(tail):
        if tok.token_type == TokenType.L_PAREN:
            depth += 1
        elif tok.token_type == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and starts_partitioning(tail, i):
            break
        elif depth == 0:
            out.append(tok)
    return out


def _comment(options: list[Token]) -> str | None:
    for i, tok in enumerate(options):
        if token_word(tok) == "COMMENT":
            j = i + 2 if i + 1 < len(options) and options[i + 1].token_type == TokenType.EQ else i + 1
            if j < len(options) and options[j].token_type == TokenType.STRING:
                return options[j].text
    return None
