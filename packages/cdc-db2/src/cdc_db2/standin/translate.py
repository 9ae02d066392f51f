"""Db2 SQL to PostgreSQL for the stand-in: the one place that adapts what PostgreSQL lacks.

The connector's statements are Db2 SQL. PostgreSQL runs most of them as they are (``VALUES (f(...))``,
``LOCK TABLE ... IN EXCLUSIVE MODE``, ``FETCH FIRST n ROWS ONLY``, ``LEAD``/``LAG``); here only:
``?`` markers become ``%s``; ``SET CURRENT ISOLATION`` becomes the session's isolation level;
the ``CURRENT TIMESTAMP``/``CURRENT SERVER`` special registers become PostgreSQL's functions; a
trailing isolation clause (``WITH UR|CS|RS|RR``) and a ``FOR READ ONLY``/``FOR FETCH ONLY`` before
it (z/OS's reads) are dropped; ``SET CURRENT LOCK TIMEOUT`` becomes ``lock_timeout`` (WAIT: 0, NOT
WAIT: 1 ms, NULL: the default); a savepoint's ``ON ROLLBACK RETAIN CURSORS`` is dropped; the ``VARCHAR(expr)``
scalar function (not a CAST's ``AS VARCHAR(n)``) becomes ``standin.db2_varchar``, which gives a TIMESTAMP(7..12)
as Db2's string (catalog_sql).
"""

from __future__ import annotations

import re
from functools import lru_cache

_ISOLATION = re.compile(r"\s*SET\s+CURRENT\s+ISOLATION\s*=?\s*(UR|CS|RS|RR|RESET)\s*;?\s*$", re.I)
_TOKENS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\?|%|CURRENT\s+TIMESTAMP\b|CURRENT\s+SERVER\b|"
                     r"\bAS\s+VARCHAR\s*\(|\bVARCHAR\s*\(", re.I)
_LOCK_TIMEOUT = re.compile(r"\s*SET\s+CURRENT\s+LOCK\s+TIMEOUT\s*=?\s*(WAIT|NOT\s+WAIT|NULL|\d+)\s*;?\s*$", re.I)
_SAVEPOINT_CLAUSE = re.compile(r"\s+ON\s+ROLLBACK\s+RETAIN\s+CURSORS\s*;?\s*$", re.I)
_ISOLATION_CLAUSE = re.compile(r"(?:\s+FOR\s+(?:READ|FETCH)\s+ONLY)?(?:\s+WITH\s+(UR|CS|RS|RR))?\s*;?\s*$", re.I)

#: Db2 isolation levels and the PostgreSQL level a reader gets for them. PostgreSQL never reads
#: uncommitted rows. Db2's RS (read stability) locks what it reads, and each statement reads what is
#: committed when it reads, so after ``LOCK TABLE`` on one table after the other (an ``exclusive``
#: snapshot) the rows show every commit before the last lock: PostgreSQL's READ COMMITTED reads so (its
#: REPEATABLE READ would fix the rows at the transaction's first query, before the later locks).
ISOLATION_LEVELS = {"UR": "READ UNCOMMITTED", "CS": "READ COMMITTED", "RS": "READ COMMITTED", "RR": "SERIALIZABLE",
                    "RESET": "READ COMMITTED"}


def _token(m: re.Match[str]) -> str:
    """One token outside string literals, adapted."""
    t = m.group(0)
    if t == "?":
        return "%s"
    if t == "%":
        return "%%"
    if t[0] in "'\"":
        return t.replace("%", "%%")  # psycopg reads every % of a statement with parameters
    upper = t.upper()
    if upper.startswith("AS"):
        return t  # a CAST's target type
    if upper.startswith("VARCHAR"):
        return "standin.db2_varchar("
    # CURRENT SERVER: Db2 gives the database name in upper case.
    return "CURRENT_TIMESTAMP" if "TIMESTAMP" in t.upper() else "upper(current_database())"


@lru_cache(maxsize=1024)
def translate(db2: str) -> tuple[str, str]:
    """``(kind, PostgreSQL text)`` for one Db2 statement: kind ``isolation`` (the text is the level) or ``query``."""
    m = _ISOLATION.match(db2)
    if m:
        return "isolation", ISOLATION_LEVELS[m.group(1).upper()]
    m = _LOCK_TIMEOUT.match(db2)
    if m:
        value = " ".join(m.group(1).upper().split())
        pg = {"WAIT": "0", "NOT WAIT": "'1ms'", "NULL": "DEFAULT"}.get(value) or f"'{value}s'"
        return "query", f"SET lock_timeout = {pg}"
    db2 = _SAVEPOINT_CLAUSE.sub("", db2)
    return "query", _TOKENS.sub(_token, _ISOLATION_CLAUSE.sub("", db2))
