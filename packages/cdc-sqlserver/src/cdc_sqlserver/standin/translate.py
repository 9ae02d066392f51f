"""T-SQL to PostgreSQL for the stand-in: every statement the connector sends is parsed as T-SQL here.

sqlglot (``read="tsql"``) parses and rewrites ordinary statements. The few T-SQL statements
sqlglot does not parse get a small grammar of their own: ``SET TRANSACTION ISOLATION LEVEL``
and ``EXEC[UTE] proc @p = value, ...`` (each value still parsed by sqlglot as T-SQL).

``PARSE(text AS date|datetime|datetime2|datetimeoffset|smalldatetime|time)`` (sqlglot leaves it an
anonymous function) becomes ``standin.tsql_parse(text, '<type>')`` (``PARSE_FUNCTION``, created with the
stand-in's objects), cast to the PostgreSQL type whose value pyodbc would give for SQL Server's.
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
#: ``SAVE TRAN[SACTION] name`` / ``ROLLBACK TRAN[SACTION] name``: a savepoint, and a rollback to it.
_SAVE = re.compile(r"\s*SAVE\s+TRAN(?:SACTION)?\s+(\w+)\s*;?\s*$", re.I)
_ROLLBACK_TO = re.compile(r"\s*ROLLBACK\s+TRAN(?:SACTION)?\s+(\w+)\s*;?\s*$", re.I)
#: ``SET LOCK_TIMEOUT ms``: SQL Server's 0 is "do not wait" (PostgreSQL's 0 waits for ever: 1 ms), -1 "wait for ever".
_LOCK_TIMEOUT = re.compile(r"\s*SET\s+LOCK_TIMEOUT\s+(-?\d+)\s*;?\s*$", re.I)

#: SQL Server isolation levels and the PostgreSQL level a reader sees alike. SNAPSHOT is PostgreSQL's
#: REPEATABLE READ (both are snapshot isolation, fixed at the transaction's first read). SQL Server's
#: REPEATABLE READ is not: it locks what it reads, and each statement reads what is committed when it
#: reads, so after TABLOCKX on one table after the other (an ``exclusive`` snapshot) the rows show every
#: commit before the last lock; PostgreSQL's READ COMMITTED reads so (its REPEATABLE READ would fix the
#: rows at the first table's lock and hide commits to the tables locked later). READ UNCOMMITTED reads
#: committed data only.
ISOLATION_LEVELS = {"READ UNCOMMITTED": "READ UNCOMMITTED", "READ COMMITTED": "READ COMMITTED",
                    "REPEATABLE READ": "READ COMMITTED", "SNAPSHOT": "REPEATABLE READ",
                    "SERIALIZABLE": "SERIALIZABLE"}


#: ``standin.tsql_parse(value, type)``: SQL Server's ``PARSE(value AS type)`` for the temporal types, as text.
#:
#: What it accepts: the ISO forms SQL Server stores defaults in (``yyyy-mm-dd``, then ``[ |T]hh:mm[:ss[.f{1,7}]]``,
#: then ``Z`` or ``[+-]hh:mm``) and, for ``time``, ``hh:mm[:ss[.f{1,7}]]``; anything else (``etdate(``, which is
#: what Debezium sends for ``(getdate())``) raises SQL Server's message for error 9819 with SQLSTATE 22007. (.NET's
#: DateTime.Parse behind PARSE takes more forms, in the session's culture; defaults never come in them here.)
#: What it gives: ``date`` the day; ``datetime`` rounded to SQL Server's 1/300 s (round half up, 23:59:59.999 is
#: the next day), then to milliseconds as the driver reports them ((ticks * 10 + 1) / 3); ``smalldatetime`` rounded
#: to the minute from there (29.999 s rounds up, 29.998 down); ``datetime2`` and ``time`` at 100 ns, then cut to
#: microseconds as pyodbc's datetime/time keep them (PostgreSQL would round); ``datetimeoffset`` as SQL Server
#: shows it, ``yyyy-mm-dd hh:mm:ss.fffffff +hh:mm`` (its own offset: PostgreSQL's timestamptz would lose it; no
#: offset written is ``+00:00``, .NET's AssumeUniversal). An offset given to another type moves the value to the
#: server's time zone, UTC here, as DateTime.Parse does. Out of range (DATETIME before 1753, SMALLDATETIME outside
#: 1900-01-01..2079-06-06) is the same error.
PARSE_FUNCTION = r"""
CREATE OR REPLACE FUNCTION standin.tsql_parse(value text, data_type text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
    m text[];
    d date;
    t bigint;      -- 100 ns units since midnight
    off int;       -- the offset written, in minutes
    ticks bigint;  -- DATETIME's 1/300 s since midnight
    ms bigint;
    minute bigint;
    fail text := format('Error converting string value %s into data type %s using culture ''''.',
                        quote_literal(value), data_type);
BEGIN
    IF value IS NULL THEN
        RETURN NULL;
    END IF;
    IF data_type = 'time' THEN
        m := regexp_match(value, '^\s*()()()(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,7}))?)?\s*$');
    ELSIF data_type IN ('date', 'datetime', 'datetime2', 'datetimeoffset', 'smalldatetime') THEN
        m := regexp_match(value, '^\s*(\d{4})-(\d{1,2})-(\d{1,2})(?:(?:\s+|T)(\d{1,2}):(\d{1,2})(?::(\d{1,2})'
                                 '(?:\.(\d{1,7}))?)?)?\s*(?:(Z)|([+-])(\d{1,2}):(\d{2}))?\s*$');
    ELSE
        RAISE EXCEPTION USING ERRCODE = '42000', MESSAGE = format('the stand-in''s PARSE has no type %s', data_type);
    END IF;
    IF m IS NULL OR coalesce(m[4], '0')::int > 23 OR coalesce(m[5], '0')::int > 59
            OR coalesce(m[6], '0')::int > 59 OR coalesce(m[10], '0')::int > 14 OR coalesce(m[11], '0')::int > 59 THEN
        RAISE EXCEPTION USING ERRCODE = '22007', MESSAGE = fail;
    END IF;
    IF data_type <> 'time' THEN
        BEGIN
            d := make_date(m[1]::int, m[2]::int, m[3]::int);
        EXCEPTION WHEN others THEN
            RAISE EXCEPTION USING ERRCODE = '22007', MESSAGE = fail;
        END;
    END IF;
    t := ((coalesce(m[4], '0')::int * 60 + coalesce(m[5], '0')::int) * 60 + coalesce(m[6], '0')::int)::bigint * 10000000
         + rpad(coalesce(m[7], ''), 7, '0')::bigint;
    off := CASE WHEN m[9] IS NULL THEN 0
                ELSE (m[10]::int * 60 + m[11]::int) * (CASE WHEN m[9] = '-' THEN -1 ELSE 1 END) END;
    IF data_type NOT IN ('time', 'datetimeoffset') AND off <> 0 THEN
        t := t - off::bigint * 600000000;
        WHILE t < 0 LOOP t := t + 864000000000; d := d - 1; END LOOP;
        WHILE t >= 864000000000 LOOP t := t - 864000000000; d := d + 1; END LOOP;
    END IF;
    IF data_type = 'date' THEN
        RETURN to_char(d, 'YYYY-MM-DD');
    END IF;
    IF data_type IN ('datetime', 'smalldatetime') THEN
        ticks := floor(t * 300 / 10000000.0 + 0.5);
        IF ticks >= 300 * 86400 THEN
            ticks := ticks - 300 * 86400;
            d := d + 1;
        END IF;
        IF data_type = 'smalldatetime' THEN
            minute := (ticks + 300 * 30) / (300 * 60);
            IF minute >= 1440 THEN
                minute := minute - 1440;
                d := d + 1;
            END IF;
            IF d < DATE '1900-01-01' OR d > DATE '2079-06-06' THEN
                RAISE EXCEPTION USING ERRCODE = '22007', MESSAGE = fail;
            END IF;
            t := minute * 600000000;
        ELSE
            IF d < DATE '1753-01-01' THEN
                RAISE EXCEPTION USING ERRCODE = '22007', MESSAGE = fail;
            END IF;
            ms := (ticks * 10 + 1) / 3;
            t := ms * 10000;
        END IF;
    END IF;
    IF data_type = 'datetimeoffset' THEN
        RETURN to_char(d, 'YYYY-MM-DD') || ' ' || to_char(make_interval(secs => (t / 10000000)::double precision),
               'HH24:MI:SS') || '.' || lpad((t % 10000000)::text, 7, '0') || ' '
               || CASE WHEN off < 0 THEN '-' ELSE '+' END || lpad((abs(off) / 60)::text, 2, '0') || ':'
               || lpad((abs(off) % 60)::text, 2, '0');
    END IF;
    -- datetime2, time (and datetime, smalldatetime, already exact): microseconds, cut as pyodbc cuts 100 ns.
    RETURN CASE WHEN data_type = 'time' THEN '' ELSE to_char(d, 'YYYY-MM-DD') || ' ' END
           || to_char(make_interval(secs => (t / 10000000)::double precision), 'HH24:MI:SS') || '.'
           || lpad(((t % 10000000) / 10)::text, 6, '0');
END
$fn$;
"""
#: PARSE's target type -> the PostgreSQL type of the result (text for DATETIMEOFFSET: see PARSE_FUNCTION).
_PARSE_TYPES = {"date": "DATE", "datetime": "TIMESTAMP", "datetime2": "TIMESTAMP", "smalldatetime": "TIMESTAMP",
                "time": "TIME", "datetimeoffset": None}


def _parse_call(node: exp.Expression) -> exp.Expression:
    """``PARSE(x AS <temporal type>)`` as ``CAST(standin.tsql_parse(x, '<type>') AS <pg type>)``; other nodes as they are."""
    if not (isinstance(node, exp.Anonymous) and node.name.upper() == "PARSE"):
        return node
    args = node.expressions
    if len(args) != 1 or not isinstance(args[0], exp.Alias) or args[0].alias.lower() not in _PARSE_TYPES:
        raise ValueError(f"the stand-in's PARSE takes (text AS {'|'.join(_PARSE_TYPES)}), not {node.sql('tsql')}")
    kind = args[0].alias.lower()
    call = exp.Dot(this=exp.to_identifier("standin"),
                   expression=exp.Anonymous(this="tsql_parse", expressions=[args[0].this, exp.Literal.string(kind)]))
    target = _PARSE_TYPES[kind]
    return call if target is None else exp.Cast(this=call, to=exp.DataType.build(target))


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


#: A ``?`` placeholder, or what may hold one that is not: a string literal, a bracketed or double-quoted identifier.
_PLACEHOLDER = re.compile(r"'(?:[^']|'')*'|\[(?:[^\]]|\]\])*\]|\"(?:[^\"]|\"\")*\"|\?")
_NUMBERED = re.compile(r"\$__p(\d+)\b")


def _number_placeholders(tsql: str) -> str:
    """``?`` (outside string literals) as ``@__p0``, ``@__p1``...: translation may move them (``TOP (?)`` -> ``LIMIT``)."""
    counter = iter(range(10_000))
    return _PLACEHOLDER.sub(lambda m: m.group(0) if m.group(0) != "?" else f"@__p{next(counter)}", tsql)


@lru_cache(maxsize=1024)
def translate(tsql: str) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    """``(kind, PostgreSQL text, (table, lock mode) to lock first)`` for one T-SQL statement: ``TABLOCKX`` is an
    ``ACCESS EXCLUSIVE`` lock, ``HOLDLOCK``/``SERIALIZABLE`` a ``SHARE`` lock (held to the end of the transaction).
    ``kind``: ``isolation``, ``query``, or ``statement`` (a query whose error must not end the transaction).

    Parameters come out as ``%(pN)s`` named by their position in the T-SQL text.
    """
    m = _ISOLATION.match(tsql)
    if m:
        return "isolation", ISOLATION_LEVELS[" ".join(m.group(1).upper().split())], ()
    m = _SAVE.match(tsql)
    if m:
        return "query", f"SAVEPOINT {m.group(1)}", ()
    m = _ROLLBACK_TO.match(tsql)
    if m:
        return "query", f"ROLLBACK TO SAVEPOINT {m.group(1)}", ()
    m = _LOCK_TIMEOUT.match(tsql)
    if m:
        ms = int(m.group(1))
        return "query", f"SET lock_timeout = {0 if ms < 0 else max(ms, 1)}", ()
    m = _EXEC.match(tsql)
    if m:
        return "query", _exec(m.group(1), _number_placeholders(m.group(2))), ()
    tree = sqlglot.parse_one(_number_placeholders(tsql), read="tsql")
    # SQL Server ends only the statement on PARSE's error, the transaction goes on: dbapi runs these in a savepoint.
    kind = "statement" if any(a.name.upper() == "PARSE" for a in tree.find_all(exp.Anonymous)) else "query"
    tree = tree.transform(_parse_call)
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
    return kind, pg, tuple(locks)
