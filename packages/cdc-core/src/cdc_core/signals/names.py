"""Matching ``data-collections`` entries of a signal against the captured tables, never trusting their text.

An entry is either a quoted name, ``"public"."My.Table"`` (each part in double quotes, ``""``
for a quote inside; unquoted parts allowed where they have no dot), matched exactly; or an anchored
regular expression over ``schema.table`` (``database.table`` where there are no schemas). Either
way the result is a set of tables the connector already captures: a name in a signal is only
ever compared with known names, so no text of it reaches a SQL statement.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from cdc_core.relational import Table

#: The longest entry accepted (a longer one is refused, so a signal cannot make matching slow).
MAX_ENTRY = 512
#: A quantified group that itself holds a quantifier, e.g. ``(a+)+``: the shape of catastrophic backtracking.
_NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*[*+}](?:[^()\\]|\\.)*\)\s*[*+{]")


class SignalDataError(ValueError):
    """A signal's data is invalid; the message says which value and why (it becomes a notification)."""


def parse_quoted_name(text: str) -> list[str] | None:
    """The parts of a quoted name (``"a"."b.c"`` -> ``["a", "b.c"]``), or None if ``text`` has no quotes.

    SignalDataError if it has quotes but is not a well-formed quoted name.
    """
    if '"' not in text:
        return None
    parts: list[str] = []
    i, n = 0, len(text)
    while True:
        if i < n and text[i] == '"':
            j, buf = i + 1, []
            while True:
                k = text.find('"', j)
                if k < 0:
                    raise SignalDataError(f"{text!r} has an unterminated quoted part")
                buf.append(text[j:k])
                if k + 1 < n and text[k + 1] == '"':
                    buf.append('"')
                    j = k + 2
                    continue
                i = k + 1
                break
            parts.append("".join(buf))
        else:
            m = re.compile(r"[A-Za-z0-9_$]+").match(text, i)
            if m is None:
                raise SignalDataError(f"{text!r} is not a quoted name like \"schema\".\"table\"")
            parts.append(m.group())
            i = m.end()
        if i == n:
            return parts
        if text[i] != ".":
            raise SignalDataError(f"{text!r} is not a quoted name like \"schema\".\"table\" (unexpected {text[i]!r})")
        i += 1


def _name_parts(table: Table) -> list[str]:
    tid = table.id
    return [p for p in (tid.catalog if tid.schema is None else tid.schema, tid.table) if p is not None]


class NameMatcher:
    """One ``data-collections`` entry, checked when built: a quoted name or an anchored regex."""

    def __init__(self, entry: object):
        if not isinstance(entry, str) or not entry.strip():
            raise SignalDataError(f"data-collections entry {entry!r} is not a table name")
        if len(entry) > MAX_ENTRY:
            raise SignalDataError(f"data-collections entry of {len(entry)} characters is too long (at most {MAX_ENTRY})")
        if "\x00" in entry:
            raise SignalDataError("data-collections entry contains a NUL character")
        self.entry = entry.strip()
        self.parts = parse_quoted_name(self.entry)
        self.pattern: re.Pattern[str] | None = None
        if self.parts is None:
            if _NESTED_QUANTIFIER.search(self.entry):
                raise SignalDataError(f"data-collections entry {self.entry!r} repeats a repeated group, which can "
                                      "make matching take forever; write it without nested quantifiers")
            try:
                self.pattern = re.compile(self.entry)
            except re.error as e:
                raise SignalDataError(f"data-collections entry {self.entry!r} is not a valid regular expression: {e}") from None

    def matches(self, table: Table) -> bool:
        """True if the entry names ``table``: ``schema.table``, or with the database first where a table id has
        both (SQL Server's and Db2's fully-qualified ``<database>.<schema>.<table>``, as signal.data.collection)."""
        tid = table.id
        if self.parts is not None:
            return _name_parts(table) == self.parts or (
                tid.catalog is not None and tid.schema is not None and [tid.catalog, tid.schema, tid.table] == self.parts)
        assert self.pattern is not None
        return self.pattern.fullmatch(tid.identifier) is not None or (
            tid.catalog is not None and tid.schema is not None
            and self.pattern.fullmatch(f"{tid.catalog}.{tid.identifier}") is not None)


def select_tables(entries: object, tables: Iterable[Table], what: str = "data-collections",
                  unmatched: list[str] | None = None) -> list[Table]:
    """The captured tables the entries name, in the entries' order; SignalDataError for any entry naming none.

    With ``unmatched`` (a list), an entry naming no table is appended to it instead, and only entries that all
    name nothing are refused: Debezium 2.7.4's incremental snapshot keeps such an entry and passes over it when its
    turn comes ("Schema not found for table", AbstractIncrementalSnapshotChangeEventSource.isTableInvalid), so
    ``["invalid1", "db.dbo.a"]`` snapshots ``a`` (AbstractIncrementalSnapshotTest.invalidTablesInTheList). cdc
    still refuses a signal naming no table at all, where Debezium would start an empty snapshot.
    """
    if not isinstance(entries, list):
        raise SignalDataError(f"{what} must be an array of table names, not {type(entries).__name__}")
    tables = sorted(tables, key=lambda t: t.id.identifier)
    out: list[Table] = []
    missing: list[str] = []
    for entry in entries:
        matcher = NameMatcher(entry)
        found = [t for t in tables if matcher.matches(t)]
        if not found:
            if unmatched is None:
                raise SignalDataError(f"{what} entry {matcher.entry!r} matches no captured table")
            missing.append(matcher.entry)
        out += [t for t in found if t not in out]
    if missing and not out:
        raise SignalDataError(f"{what} entry {missing[0]!r} matches no captured table")
    if unmatched is not None:
        unmatched += missing
    return out
