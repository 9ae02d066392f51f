"""Java's ``Matcher.replaceFirst`` replacement strings (``$1``, ``${name}``, ``\\$``) in Python."""

from __future__ import annotations

import re
from collections.abc import Callable

_TOKEN = re.compile(r"\\(.)|\$\{([A-Za-z][A-Za-z0-9]*)\}|\$([0-9]+)|(\$)", re.S)


def java_replacement(replacement: str) -> Callable[[re.Match[str]], str]:
    """A function for ``re.sub`` that writes ``replacement`` as Java's ``Matcher.appendReplacement`` does.

    ``$n`` is group n (as Java: the first digit, then more digits while they still name a group),
    ``${name}`` a named group, ``\\x`` the character x. A lone ``$`` raises ValueError, as in Java.
    """
    parts: list[str | tuple[str, str]] = []
    pos = 0
    for m in _TOKEN.finditer(replacement):
        if m.start() > pos:
            parts.append(replacement[pos:m.start()])
        if m.group(1) is not None:
            parts.append(m.group(1))
        elif m.group(2) is not None:
            parts.append(("name", m.group(2)))
        elif m.group(3) is not None:
            parts.append(("digits", m.group(3)))
        else:
            raise ValueError(f"{replacement!r}: a '$' must be followed by a group number or {{name}}")
        pos = m.end()
    if pos < len(replacement):
        parts.append(replacement[pos:])

    def write(match: re.Match[str]) -> str:
        """The replacement text for one match."""
        out = []
        for p in parts:
            if p.__class__ is str:
                out.append(p)  # type: ignore[arg-type]
            elif p[0] == "name":  # type: ignore[index]
                out.append(match.group(p[1]) or "")  # type: ignore[index]
            else:
                out.append(_digits(match, p[1]))  # type: ignore[index]
        return "".join(out)

    return write


def replace_first(pattern: re.Pattern[str], replacement: Callable[[re.Match[str]], str], text: str) -> str | None:
    """``text`` with the first match replaced, if the whole of ``text`` matches (``matches()`` then
    ``replaceFirst``, as Kafka's RegexRouter and Debezium's ByLogicalTableRouter do); None otherwise."""
    if pattern.fullmatch(text) is None:
        return None
    return pattern.sub(replacement, text, count=1)


def _digits(match: re.Match[str], digits: str) -> str:
    """Group ``$<digits>`` as Java reads it: one digit, more while the number still names a group; the rest literal."""
    n, used = int(digits[0]), 1
    while used < len(digits) and int(digits[: used + 1]) <= (match.re.groups or 0):
        n, used = int(digits[: used + 1]), used + 1
    return (match.group(n) or "") + digits[used:]
