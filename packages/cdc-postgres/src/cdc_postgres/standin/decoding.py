"""Parsing PostgreSQL's ``test_decoding`` output: one change line into its table, kind and column values."""

from __future__ import annotations

import re
from typing import NamedTuple

_HEAD = re.compile(r'table (?P<table>(?:"(?:[^"]|"")*"|[^.\s]+)\.(?:"(?:[^"]|"")*"|[^:\s]+)): '
                   r"(?P<kind>INSERT|UPDATE|DELETE|TRUNCATE):")
_COLUMN = re.compile(r'\s*(?P<name>"(?:[^"]|"")*"|[^\[\s]+)\[(?P<type>[^\]]*\]?(?:\[\])?)\]:')
_QUOTED = re.compile(r"'((?:[^']|'')*)'")
_BARE = re.compile(r"[^ ]+")
UNCHANGED_TOAST = object()


class DecodedChange(NamedTuple):
    """One decoded row change: ``table`` as ``schema.table``; ``old``/``new`` map column name to text (None: NULL)."""

    schema: str
    table: str
    kind: str
    old: dict[str, object] | None
    new: dict[str, object] | None


def _ident(text: str) -> str:
    """An identifier as test_decoding prints it, unquoted."""
    return text[1:-1].replace('""', '"') if text.startswith('"') else text


def _columns(text: str) -> dict[str, object]:
    """``name[type]:value ...`` as a dict of column name to text value (None: NULL)."""
    out: dict[str, object] = {}
    if text.strip() == "(no-tuple-data)":
        return out  # a table without a replica identity key (never a captured table: enable_table sets FULL)
    i = 0
    while i < len(text) and text[i:].strip():
        m = _COLUMN.match(text, i)
        if not m:
            raise ValueError(f"cannot parse test_decoding columns at {text[i:i + 60]!r}")
        i = m.end()
        if text.startswith("'", i):
            q = _QUOTED.match(text, i)
            assert q is not None
            value: object = q.group(1).replace("''", "'")
            i = q.end()
        elif text.startswith("unchanged-toast-datum", i):
            value, i = UNCHANGED_TOAST, i + len("unchanged-toast-datum")
        else:
            b = _BARE.match(text, i)
            assert b is not None
            value = None if b.group(0) == "null" else b.group(0)
            i = b.end()
        out[_ident(m.group("name"))] = value
    return out


def parse_change(line: str, wanted: object = None) -> DecodedChange | None:
    """A ``table s.t: INSERT: ...`` line (None for lines of other kinds, or of tables not in ``wanted``)."""
    m = _HEAD.match(line)
    if not m:
        return None
    schema_text, _, table_text = m.group("table").partition('.') if not m.group("table").startswith('"') else \
        _split_quoted(m.group("table"))
    rest = line[m.end():]
    kind = m.group("kind")
    schema, table = _ident(schema_text), _ident(table_text)
    if wanted is not None and (schema, table) not in wanted:
        return None
    if kind == "TRUNCATE":
        return DecodedChange(schema, table, kind, None, None)
    if kind == "INSERT":
        return DecodedChange(schema, table, kind, None, _columns(rest))
    if kind == "DELETE":
        return DecodedChange(schema, table, kind, _columns(rest), None)
    old = None
    if rest.startswith(" old-key:"):
        split = rest.index(" new-tuple:")
        old = _columns(rest[len(" old-key:"):split])
        rest = rest[split + len(" new-tuple:"):]
    new = _columns(rest)
    if old is not None:
        new = {k: old.get(k) if v is UNCHANGED_TOAST else v for k, v in new.items()}
    return DecodedChange(schema, table, kind, old, new)


def _split_quoted(text: str) -> tuple[str, str, str]:
    """Split ``"schema"."table"`` at the dot between them."""
    end = 1
    while True:
        end = text.index('"', end)
        if text.startswith('""', end):
            end += 2
            continue
        break
    return text[:end + 1], ".", text[end + 2:]
