"""Schema and field name adjustment (``schema.name.adjustment.mode``, ``field.name.adjustment.mode``)."""

from __future__ import annotations

import re
from collections.abc import Callable

_VALID_CHAR = re.compile(r"[A-Za-z0-9_]")


def _adjust_name(name: str, unicode: bool) -> str:
    out = []
    for i, ch in enumerate(name):
        ok = ch.isascii() and (ch.isalpha() or ch == "_" or (i > 0 and ch.isdigit()))
        if ok:
            out.append(ch)
        elif unicode:
            out.append(f"_u{ord(ch):04x}")
        else:
            out.append("_")
    return "".join(out)


def field_adjuster(mode: str) -> Callable[[str], str]:
    """``none`` keeps names; ``avro`` replaces invalid characters with ``_``; ``avro_unicode`` with ``_uXXXX``."""
    if mode == "none":
        return lambda name: name
    unicode = mode == "avro_unicode"
    return lambda name: _adjust_name(name, unicode)


def schema_adjuster(mode: str) -> Callable[[str], str]:
    """Like ``field_adjuster``, for dotted full names: each dot-separated part is adjusted on its own."""
    if mode == "none":
        return lambda name: name
    unicode = mode == "avro_unicode"
    return lambda name: ".".join(_adjust_name(part, unicode) for part in name.split("."))
