"""Parsing rows of ``COPY ... TO STDOUT`` text format into PostgreSQL's text values."""

from __future__ import annotations

import re

_ESCAPE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|(.))", re.DOTALL)
_SIMPLE = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}


def _replace(m: re.Match[str]) -> str:
    octal, hexa, other = m.groups()
    if octal is not None:
        return chr(int(octal, 8))
    if hexa is not None:
        return chr(int(hexa, 16))
    return _SIMPLE.get(other, other)


def unescape(field: str) -> str | None:
    """One field of a text-format COPY row: ``\\N`` is NULL, backslash escapes are decoded."""
    if field == "\\N":
        return None
    return _ESCAPE.sub(_replace, field)


def parse_row(line: str) -> list[str | None]:
    """Split one COPY text row (without its newline) into values (None for NULL)."""
    fields = line.split("\t")
    if "\\" not in line:
        return fields  # type: ignore[return-value]
    return [unescape(f) if "\\" in f else f for f in fields]


def parse_block(block: bytes) -> list[list[str | None]]:
    """Split a block of whole COPY text rows (each ending with a newline) into rows of values.

    One decode and one split for the block; only rows holding a backslash take ``parse_row``'s
    unescaping path.
    """
    lines = str(block, "utf-8").split("\n")
    lines.pop()  # after the last newline
    if b"\\" not in block:
        return [line.split("\t") for line in lines]
    return [parse_row(line) if "\\" in line else line.split("\t") for line in lines]
