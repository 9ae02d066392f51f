"""Java regular expressions and ``Matcher.replaceFirst`` replacements, as Kafka Connect's transforms use them."""

from __future__ import annotations

import re
from collections.abc import Callable

_NAMED_GROUP = re.compile(r"\(\?<([A-Za-z][A-Za-z0-9]*)>")


def java_pattern(pattern: str) -> re.Pattern[str]:
    """Compile a Java regex: ``(?<name>...)`` becomes Python's ``(?P<name>...)``; re.error if Python cannot read it."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        m = _NAMED_GROUP.match(pattern, i)
        if m:
            out.append(f"(?P<{m.group(1)}>")
            i = m.end()
            continue
        out.append(c)
        i += 1
    return re.compile("".join(out))


def java_replacement(replacement: str, pattern: re.Pattern[str]) -> Callable[[re.Match[str]], str]:
    """A function of a match giving Java's ``appendReplacement`` text: ``$1``, ``${name}``, ``\\x`` for a literal x.

    ValueError for a reference to a group the pattern does not have (Java throws at the first match).
    """
    parts: list[str | int] = []
    i, n = 0, len(replacement)
    literal: list[str] = []
    while i < n:
        c = replacement[i]
        if c == "\\":
            if i + 1 >= n:
                raise ValueError("character to be escaped is missing at the end of the replacement")
            literal.append(replacement[i + 1])
            i += 2
        elif c == "$":
            if i + 1 >= n:
                raise ValueError("illegal group reference: '$' at the end of the replacement")
            if replacement[i + 1] == "{":
                end = replacement.find("}", i + 2)
                name = replacement[i + 2 : end] if end > 0 else ""
                if end < 0 or not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", name):
                    raise ValueError(f"named capturing group is missing or malformed in {replacement!r}")
                if name not in pattern.groupindex:
                    raise ValueError(f"no group with name {{{name}}} in the regular expression")
                parts.append("".join(literal))
                literal = []
                parts.append(pattern.groupindex[name])
                i = end + 1
            elif replacement[i + 1].isdigit():
                # Java reads the first digit, then more digits while the number stays a group of the pattern.
                number, j = int(replacement[i + 1]), i + 2
                if number > pattern.groups:
                    raise ValueError(f"no group {number} in the regular expression")
                while j < n and replacement[j].isdigit() and number * 10 + int(replacement[j]) <= pattern.groups:
                    number = number * 10 + int(replacement[j])
                    j += 1
                parts.append("".join(literal))
                literal = []
                parts.append(number)
                i = j
            else:
                raise ValueError(f"illegal group reference in {replacement!r}")
        else:
            literal.append(c)
            i += 1
    parts.append("".join(literal))

    def replace(m: re.Match[str]) -> str:
        return "".join(p if isinstance(p, str) else (m.group(p) or "") for p in parts)

    return replace


def replace_first(pattern: re.Pattern[str], replacement: Callable[[re.Match[str]], str], text: str) -> str | None:
    """``text`` with the first match replaced, if the whole of ``text`` matches (``matches()`` then
    ``replaceFirst``, as Kafka's RegexRouter and Debezium's ByLogicalTableRouter do); None otherwise."""
    if pattern.fullmatch(text) is None:
        return None
    return pattern.sub(replacement, text, count=1)
