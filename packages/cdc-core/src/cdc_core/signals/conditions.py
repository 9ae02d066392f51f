"""``additional-conditions`` filters: a small predicate language parsed into a tree, never spliced into SQL.

Debezium appends a signal's ``filter`` text to the snapshot's SELECT as it is. Here a filter is
parsed against the table's columns and rendered again by the core: column names are checked and
quoted by the connector, every literal becomes a bound parameter. The grammar::

    filter     := or
    or         := and ("OR" and)*
    and        := not ("AND" not)*
    not        := "NOT" not | "(" or ")" | predicate
    predicate  := column op literal | column "IS" ["NOT"] "NULL"
                | column ["NOT"] "IN" "(" literal ("," literal)* ")"
                | column ["NOT"] "BETWEEN" literal "AND" literal
                | column ["NOT"] "LIKE" string
    op         := "=" | "<>" | "!=" | "<" | "<=" | ">" | ">="
    column     := name | "quoted name"           (a column of the table)
    literal    := 'string' | number | TRUE | FALSE

Keywords are case-insensitive. Anything else (functions, subqueries, casts, comments, ``;``) is
refused with the position it starts at. A blocking snapshot's filter may also be written as
``SELECT * FROM <that table> WHERE <filter>``, as Debezium's documentation shows.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from cdc_core.relational import Table
from cdc_core.signals.names import SignalDataError

MAX_FILTER = 4096

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<string>'(?:[^']|'')*')
  | (?P<qname>"(?:[^"]|"")+")
  | (?P<number>-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)
  | (?P<op><=|>=|<>|!=|=|<|>)
  | (?P<punct>[(),.*])
  | (?P<name>[A-Za-z_][A-Za-z0-9_$]*)
""", re.VERBOSE)
_KEYWORDS = frozenset({"AND", "OR", "NOT", "IS", "NULL", "IN", "BETWEEN", "LIKE", "TRUE", "FALSE", "SELECT", "FROM",
                       "WHERE"})

Quote = Callable[[str], str]


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    pos: int


def _tokens(text: str) -> list[_Tok]:
    out, i = [], 0
    while i < len(text):
        m = _TOKEN.match(text, i)
        if m is None:
            raise SignalDataError(f"filter {text!r}: {text[i]!r} at position {i} is not allowed in a filter")
        kind = m.lastgroup or ""
        if kind != "ws":
            word = m.group()
            if kind == "name" and word.upper() in _KEYWORDS:
                kind, word = "kw", word.upper()
            out.append(_Tok(kind, word, i))
        i = m.end()
    return out


class Node:
    """A parsed filter: ``render`` gives SQL text (placeholders for literals) and the parameters."""

    def render(self, quote: Quote, placeholder: str) -> tuple[str, list[Any]]:
        """SQL text with ``placeholder`` for each literal, and the literals in order."""
        raise NotImplementedError


@dataclass(frozen=True)
class Predicate(Node):
    """``column <op> values``: op is a comparison, IS NULL, IN, BETWEEN or LIKE (maybe NOT)."""

    column: str
    op: str
    values: tuple[Any, ...] = ()

    def render(self, quote: Quote, placeholder: str) -> tuple[str, list[Any]]:
        col = quote(self.column)
        if self.op in ("IS NULL", "IS NOT NULL"):
            return f"{col} {self.op}", []
        if self.op in ("IN", "NOT IN"):
            return f"{col} {self.op} ({', '.join(placeholder for _ in self.values)})", list(self.values)
        if self.op in ("BETWEEN", "NOT BETWEEN"):
            return f"{col} {self.op} {placeholder} AND {placeholder}", list(self.values)
        return f"{col} {self.op} {placeholder}", list(self.values)


@dataclass(frozen=True)
class BoolOp(Node):
    """``AND``/``OR`` of several parts, or ``NOT`` of one."""

    op: str
    parts: tuple[Node, ...]

    def render(self, quote: Quote, placeholder: str) -> tuple[str, list[Any]]:
        texts, params = [], []
        for p in self.parts:
            t, ps = p.render(quote, placeholder)
            texts.append(f"({t})")
            params += ps
        if self.op == "NOT":
            return f"NOT {texts[0]}", params
        return f" {self.op} ".join(texts), params


class _Parser:
    def __init__(self, text: str, table: Table):
        self.text = text
        self.toks = _tokens(text)
        self.i = 0
        self.columns = {c.name: c.name for c in table.columns}
        self.folded: dict[str, list[str]] = {}
        for c in table.columns:
            self.folded.setdefault(c.name.lower(), []).append(c.name)
        self.table = table

    def fail(self, why: str) -> SignalDataError:
        tok = self.toks[self.i] if self.i < len(self.toks) else None
        where = f"at {tok.text!r} (position {tok.pos})" if tok else "at its end"
        return SignalDataError(f"filter {self.text!r} for {self.table.id}: {why} {where}")

    def peek(self, kind: str, text: str | None = None) -> bool:
        if self.i >= len(self.toks):
            return False
        t = self.toks[self.i]
        return t.kind == kind and (text is None or t.text == text)

    def take(self, kind: str, text: str | None = None) -> _Tok:
        if not self.peek(kind, text):
            raise self.fail(f"expected {text or kind}")
        self.i += 1
        return self.toks[self.i - 1]

    def parse(self) -> Node:
        if not self.toks:
            raise SignalDataError(f"filter for {self.table.id} is empty")
        node = self.or_()
        if self.i != len(self.toks):
            raise self.fail("unexpected text")
        return node

    def or_(self) -> Node:
        parts = [self.and_()]
        while self.peek("kw", "OR"):
            self.i += 1
            parts.append(self.and_())
        return parts[0] if len(parts) == 1 else BoolOp("OR", tuple(parts))

    def and_(self) -> Node:
        parts = [self.not_()]
        while self.peek("kw", "AND"):
            self.i += 1
            parts.append(self.not_())
        return parts[0] if len(parts) == 1 else BoolOp("AND", tuple(parts))

    def not_(self) -> Node:
        if self.peek("kw", "NOT"):
            self.i += 1
            return BoolOp("NOT", (self.not_(),))
        if self.peek("punct", "("):
            self.i += 1
            node = self.or_()
            self.take("punct", ")")
            return node
        return self.predicate()

    def column(self) -> str:
        if self.peek("qname"):
            name = self.take("qname").text[1:-1].replace('""', '"')
            if name not in self.columns:
                self.i -= 1
                raise self.fail(f"{name!r} is not a column of the table")
            return name
        if self.peek("name"):
            word = self.take("name").text
            if word in self.columns:
                return word
            candidates = self.folded.get(word.lower(), [])
            if len(candidates) == 1:
                return candidates[0]
            self.i -= 1
            raise self.fail(f"{word!r} is not a column of the table")
        raise self.fail("expected a column name")

    def literal(self) -> Any:
        if self.peek("string"):
            return self.take("string").text[1:-1].replace("''", "'")
        if self.peek("number"):
            text = self.take("number").text
            return int(text) if re.fullmatch(r"-?\d+", text) else Decimal(text)
        if self.peek("kw", "TRUE") or self.peek("kw", "FALSE"):
            return self.take("kw").text == "TRUE"
        raise self.fail("expected a literal ('text', a number, TRUE or FALSE)")

    def predicate(self) -> Node:
        col = self.column()
        if self.peek("op"):
            op = self.take("op").text
            return Predicate(col, "<>" if op == "!=" else op, (self.literal(),))
        if self.peek("kw", "IS"):
            self.i += 1
            negated = self.peek("kw", "NOT")
            if negated:
                self.i += 1
            self.take("kw", "NULL")
            return Predicate(col, "IS NOT NULL" if negated else "IS NULL")
        negated = self.peek("kw", "NOT")
        if negated:
            self.i += 1
        prefix = "NOT " if negated else ""
        if self.peek("kw", "IN"):
            self.i += 1
            self.take("punct", "(")
            values = [self.literal()]
            while self.peek("punct", ","):
                self.i += 1
                values.append(self.literal())
            self.take("punct", ")")
            return Predicate(col, prefix + "IN", tuple(values))
        if self.peek("kw", "BETWEEN"):
            self.i += 1
            low = self.literal()
            self.take("kw", "AND")
            return Predicate(col, prefix + "BETWEEN", (low, self.literal()))
        if self.peek("kw", "LIKE"):
            self.i += 1
            if not self.peek("string"):
                raise self.fail("LIKE takes a 'string'")
            return Predicate(col, prefix + "LIKE", (self.literal(),))
        raise self.fail("expected a comparison, IS [NOT] NULL, IN, BETWEEN or LIKE")


def _strip_select(text: str, table: Table) -> str:
    """``SELECT * FROM <table> WHERE <filter>`` -> ``<filter>`` (the table must be this one)."""
    m = re.match(r"\s*SELECT\s+\*\s+FROM\s+(.+?)\s+WHERE\s+(.*)$", text, re.IGNORECASE | re.DOTALL)
    if m is None:
        raise SignalDataError(f"filter {text!r} for {table.id}: a SELECT filter must be SELECT * FROM <table> WHERE ...")
    named = [p.strip('"[]`') for p in re.split(r"\.(?=(?:[^\"]*\"[^\"]*\")*[^\"]*$)", m.group(1).strip())]
    # The table as named, its trailing parts: with the database first where the id has both a catalog and a schema
    # (SQL Server's testDB1.dbo.b in BlockingSnapshotIT's "SELECT * FROM testDB1.dbo.b WHERE aa < 500").
    wanted = [p for p in (table.id.catalog if table.id.schema is not None else None,
                          table.id.schema if table.id.schema is not None else table.id.catalog, table.id.table) if p]
    if [p.lower() for p in named] != [p.lower() for p in wanted][-len(named):] or not named:
        raise SignalDataError(f"filter {text!r} selects from {m.group(1).strip()!r}, not from {table.id}")
    return m.group(2)


def parse_filter(text: object, table: Table, allow_select: bool = False) -> Node:
    """Parse a filter for ``table``; SignalDataError saying what is wrong and where."""
    if not isinstance(text, str):
        raise SignalDataError(f"filter for {table.id} must be a string, not {type(text).__name__}")
    if len(text) > MAX_FILTER:
        raise SignalDataError(f"filter for {table.id} is too long ({len(text)} characters, at most {MAX_FILTER})")
    if allow_select and re.match(r"\s*SELECT\b", text, re.IGNORECASE):
        text = _strip_select(text, table)
    return _Parser(text, table).parse()
