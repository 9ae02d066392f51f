"""T-SQL to PostgreSQL for the stand-in: every statement the connector sends is parsed as T-SQL here.

sqlglot (``read="tsql"``) parses and rewrites ordinary statements. The few T-SQL statements
sqlglot does not parse get a small grammar of their own: ``SET TRANSACTION ISOLATION LEVEL``
and ``EXEC[UTE] proc @p = value, ...`` (each value still parsed by sqlglot as T-SQL).
"""

from __future__ import annotations

import re
from functools import lru_cache

import sqlglot
from sqlglot import exp

_ISOLATION = re.compile(r"\s*SET\s+TRANSACTION\s+ISOLATION\s+LEVEL\s+(READ\s+UNCOMMITTED|READ\s+COMMITTED|"
                        r"REPEATABLE\s+READ|SNAPSHOT|SERIALIZABLE)\s*;?\s*$", re.I)
_EXEC = re.compile(r"\s*EXEC(?:UTE)?\s+([\w.\[\]]+)\s*(.*?)\s*;?\s*$", re.I | re.S)
_ARG = re.compile(r"\s*@(\w+)\s*=\s*")

#: SQL Server isolation levels and the PostgreSQL level with the same guarantees for a reader.
#: SNAPSHOT is PostgreSQL's REPEATABLE READ (both are snapshot isolation); PostgreSQL's REPEATABLE
#: READ is stronger than SQL Server's (no phantoms), and READ UNCOMMITTED reads committed data only.
ISOLATION_LEVELS = {"READ UNCOMMITTED": "READ UNCOMMITTED", "READ COMMITTED": "READ COMMITTED",
                    "REPEATABLE READ": "REPEATABLE READ", "SNAPSHOT": "REPEATABLE READ",
                    "SERIALIZABLE": "SERIALIZABLE"}


def _name(bracketed: str) -> str:
    """A dotted T-SQL name without its brackets."""
    return ".".join(p.strip("[]") for p in bracketed.split("."))


def _exec(proc: str, args: str) -> str:
    """``EXEC proc @a = v, ...`` as ``SELECT * FROM proc(a => v, ...)``."""
    named = []
    rest = args
    while rest.strip():
        m = _ARG.match(rest)
        if not m:
            raise ValueError(f"cannot parse the EXEC arguments {args!r}")
        rest = rest[m.end():]
        depth, quote, i = 0, False, 0
        while i < len(rest):
            ch = rest[i]
            if ch == "'":
                quote = not quote
            elif not quote and ch == "(":
                depth += 1
            elif not quote and ch == ")":
                depth -= 1
            elif not quote and depth == 0 and ch == ",":
                break
            i += 1
        value = sqlglot.parse_one(f"SELECT {rest[:i]}", read="tsql").expressions[0].sql("postgres")
        value = _NUMBERED.sub(lambda m: f"%(p{m.group(1)})s", value)
        named.append(f"{m.group(1)} => {value}")
        rest = rest[i + 1:]
    return f"SELECT * FROM {_name(proc).lower()}({', '.join(named)})"


_PLACEHOLDER = re.compile(r"'(?:[^']|'')*'|\?")
_NUMBERED = re.compile(r"\$__p(\d+)\b")


def _number_placeholders(tsql: str) -> str:
    """``?`` (outside string literals) as ``@__p0``, ``@__p1``...: translation may move them (``TOP (?)`` -> ``LIMIT``)."""
    counter = iter(range(10_000))
    return _PLACEHOLDER.sub(lambda m: m.group(0) if m.group(0) != "?" else f"@__p{next(counter)}", tsql)


@lru_cache(maxsize=1024)
def translate(tsql: str) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    """``(kind, PostgreSQL text, (table, lock mode) to lock first)`` for one T-SQL statement: ``TABLOCKX`` is an
    ``ACCESS EXCLUSIVE`` lock, ``HOLDLOCK``/``SERIALIZABLE`` a ``SHARE`` lock (held to the end of the transaction).

    Parameters come out as ``%(pN)s`` named by their position in the T-SQL text.
    """
    m = _ISOLATION.match(tsql)
    if m:
        return "isolation", ISOLATION_LEVELS[" ".join(m.group(1).upper().split())], ()
    m = _EXEC.match(tsql)
    if m:
        return "query", _exec(m.group(1), _number_placeholders(m.group(2))), ()
    tree = sqlglot.parse_one(_number_placeholders(tsql), read="tsql")
    locks = []
    for table in tree.find_all(exp.Table):
        hints = [h.sql("tsql").upper() for h in (table.args.get("hints") or [])]
        name = exp.table_(table.name, db=table.db or None, quoted=True).sql("postgres")
        if any("TABLOCKX" in h for h in hints):
            locks.append((name, "ACCESS EXCLUSIVE"))
        elif any("HOLDLOCK" in h or "SERIALIZABLE" in h for h in hints):
            # SQL Server holds shared key-range locks on what the statement read until the transaction ends;
            # a SHARE table lock (writers wait, readers go on) is stronger and gives the reader the same.
            locks.append((name, "SHARE"))
    pg = _NUMBERED.sub(lambda m: f"%(p{m.group(1)})s", tree.sql("postgres").replace("%", "%%"))
    return "query", pg, tuple(locks)
