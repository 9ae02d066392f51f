"""Column types as declared: Debezium's ``typeName`` and ``jdbcType``, read from a statement's tokens.

Debezium's DDL parser (its ``DataTypeResolver``) names a column's type by the keywords the
statement wrote (``INTEGER``, ``NUMERIC``, ``DOUBLE PRECISION``, ``NATIONAL CHAR VARYING``), plus the
suffixes ``UNSIGNED`` and ``ZEROFILL``; its ``jdbcType`` comes from the same table. sqlglot
normalizes those names away, so they are read here from the tokens, and the canonical type the
value converters use is derived from them.
"""

from __future__ import annotations

from typing import NamedTuple

from sqlglot.tokens import Token, TokenType

from cdc_mysql.model import CANONICAL_OF_DECLARED, JDBC_TYPES

#: Declared names with Debezium's default (length, scale) when the statement gives none.
DEFAULT_DIMENSIONS: dict[str, tuple[int, int | None]] = {
    "DECIMAL": (10, 0), "DEC": (10, 0), "FIXED": (10, 0), "NUMERIC": (10, 0), "BIT": (1, None),
}
#: Declared names of NCHAR/NVARCHAR types: Debezium gives them the charset ``utf8`` (and NCHAR the length 1).
NATIONAL_JDBC_TYPES = frozenset({-15, -9})
#: The declared names ``BINARY`` extends (``CHAR(3) BINARY`` is Debezium's ``CHAR BINARY``).
_BINARY_SUFFIXED = frozenset({"CHAR", "VARCHAR", "TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT", "NCHAR", "NVARCHAR"})
#: Two-word type names: first word -> the words that may follow it.
_SECOND_WORDS = {
    "NATIONAL": ("CHAR", "CHARACTER", "VARCHAR"), "NCHAR": ("VARCHAR", "VARYING"), "CHAR": ("VARYING",),
    "CHARACTER": ("VARYING",), "LONG": ("VARCHAR", "VARBINARY"), "DOUBLE": ("PRECISION",),
}
_THIRD_WORDS = {("NATIONAL", "CHAR"): ("VARYING",), ("NATIONAL", "CHARACTER"): ("VARYING",)}
#: Words after which a BINARY token is a charset or collation name, not the type's BINARY attribute.
_NAMING_WORDS = frozenset({"CHARSET", "SET", "COLLATE"})
#: Words that end a type (the column's attributes begin).
_ATTRIBUTE_WORDS = frozenset({"NOT", "NULL", "DEFAULT", "AUTO_INCREMENT", "PRIMARY", "KEY", "UNIQUE", "COMMENT",
                              "GENERATED", "AS", "REFERENCES", "CHECK", "INVISIBLE", "VISIBLE", "ON", "STORED",
                              "VIRTUAL", "PERSISTENT", "FIRST", "AFTER", "CONSTRAINT", "SRID", "COMPRESSED",
                              "REF_SYSTEM_ID", "SERIAL", "WITH", "WITHOUT"})


class DeclaredType(NamedTuple):
    """A column type as the statement declared it."""

    name: str  # Debezium's type name without UNSIGNED/ZEROFILL: ``INTEGER``, ``DOUBLE PRECISION``, ``CHAR BINARY``
    unsigned: bool
    zerofill: bool
    has_length: bool  # the statement gave a length (``(n)`` or ``(m,d)``)

    @property
    def canonical(self) -> str:
        """The canonical type the converters know: ``INT`` for ``INTEGER``, ``DECIMAL`` for ``NUMERIC``."""
        return CANONICAL_OF_DECLARED.get(self.name, self.name)

    @property
    def known(self) -> bool:
        """True if Debezium's resolver knows the name (else sqlglot's reading of the type stands)."""
        return self.name in JDBC_TYPES


def _words(tok: Token) -> list[str]:
    if tok.token_type in (TokenType.IDENTIFIER, TokenType.STRING):
        return []
    return tok.text.upper().split()


def declared_type(tokens: list[Token], i: int) -> DeclaredType | None:
    """The declared type starting at ``tokens[i]`` (the token after the column name); None if there is none."""
    words: list[str] = []
    k = i
    while k < len(tokens) and tokens[k].token_type != TokenType.L_PAREN:
        ws = _words(tokens[k])
        if not ws:
            break
        if not words:
            if ws[0] in ("UNSIGNED", "SIGNED"):  # sqlglot's one token for ``UNSIGNED INTEGER``: not a column type
                break
            words.extend(ws)
        else:
            follow = _THIRD_WORDS.get(tuple(words[:2])) if len(words) == 2 else _SECOND_WORDS.get(words[0])
            if len(words) > 2 or not follow or ws[0] not in follow:
                break
            words.extend(ws)
        k += 1
    if not words:
        return None
    has_length = False
    if k < len(tokens) and tokens[k].token_type == TokenType.L_PAREN:
        depth = 0
        while k < len(tokens):
            if tokens[k].token_type == TokenType.L_PAREN:
                depth += 1
            elif tokens[k].token_type == TokenType.R_PAREN:
                depth -= 1
                if depth == 0:
                    k += 1
                    break
            k += 1
        has_length = words[0] not in ("ENUM", "SET")
    unsigned = zerofill = binary = False
    prev = ""
    for tok in tokens[k:]:
        if tok.token_type in (TokenType.COMMA, TokenType.R_PAREN):
            break
        ws = _words(tok)
        word = ws[0] if ws else ""
        if word in _ATTRIBUTE_WORDS:
            break
        if word == "UNSIGNED":
            unsigned = True
        elif word == "ZEROFILL":
            zerofill = True
        elif word == "PRECISION" and words == ["DOUBLE"]:
            words.append("PRECISION")
        elif word == "BINARY" and prev not in _NAMING_WORDS:
            binary = True
        prev = ws[-1] if ws else ""
    name = " ".join(words)
    if binary and name in _BINARY_SUFFIXED:
        name += " BINARY"
    return DeclaredType(name, unsigned or zerofill, zerofill, has_length)


def column_declarations(tokens: list[Token]) -> dict[str, DeclaredType]:
    """The declared types of the column definitions in a CREATE TABLE body's tokens (inside its parentheses)."""
    out: dict[str, DeclaredType] = {}
    item_start, depth = 0, 0
    for k, tok in enumerate([*tokens, None]):
        if tok is not None and tok.token_type == TokenType.L_PAREN:
            depth += 1
        elif tok is not None and tok.token_type == TokenType.R_PAREN:
            depth -= 1
        if tok is None or (tok.token_type == TokenType.COMMA and depth == 0):
            item = tokens[item_start:k]
            item_start = k + 1
            if len(item) >= 2 and not _is_index_item(item[0]):
                found = declared_type(item, 1)
                if found is not None:
                    out[item[0].text.lower()] = found
    return out


def _is_index_item(tok: Token) -> bool:
    """True if a CREATE TABLE body item starting with ``tok`` is a key, index or constraint, not a column."""
    if tok.token_type == TokenType.IDENTIFIER:
        return False
    return tok.text.upper().split()[0] in ("PRIMARY", "KEY", "INDEX", "UNIQUE", "CONSTRAINT", "FOREIGN", "CHECK",
                                           "FULLTEXT", "SPATIAL", "PERIOD", "LIKE", "SYSTEM")
