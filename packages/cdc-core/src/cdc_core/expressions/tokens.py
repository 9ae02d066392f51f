"""The tokenizer: an expression's text as a list of tokens, each with the column it starts at."""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from cdc_core.expressions.errors import ExpressionSyntaxError


class Token(NamedTuple):
    """One token: ``kind`` (``name``, ``string``, ``number``, ``op`` or ``end``), its text, value and 1-based column."""

    kind: str
    text: str
    value: Any
    column: int


#: Operators and punctuation, longest first so ``===`` wins over ``==`` and ``?.`` over ``?``.
_OPERATORS = ("===", "!==", "==", "!=", "<=", ">=", "&&", "||", "?.", "<", ">", "!", "+", "-", "?", ":", ".", "(",
              ")", "[", "]", ",")
_NUMBER = re.compile(r"(?:\d+\.\d+|\d+)(?:[eE][-+]?\d+)?")
_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "0": "\0", "\\": "\\", "'": "'", '"': '"',
            "/": "/", "$": "$"}
#: The longest expression accepted (a configuration value, not a program).
MAX_LENGTH = 4096


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text``, ending with an ``end`` token; ExpressionSyntaxError at the first bad character."""
    if len(text) > MAX_LENGTH:
        raise ExpressionSyntaxError(f"the expression is longer than {MAX_LENGTH} characters", MAX_LENGTH + 1)
    out: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n":
            i += 1
            continue
        if c in "'\"":
            value, end = _string(text, i)
            out.append(Token("string", text[i:end], value, i + 1))
            i = end
            continue
        if c.isdigit():
            m = _NUMBER.match(text, i)
            assert m is not None
            raw = m.group()
            if m.end() < n and (text[m.end()].isalnum() or text[m.end()] in "_$."):
                raise ExpressionSyntaxError(f"malformed number {text[i:m.end() + 1]!r}", i + 1)
            value = float(raw) if any(ch in raw for ch in ".eE") else int(raw)
            out.append(Token("number", raw, value, i + 1))
            i = m.end()
            continue
        m = _NAME.match(text, i)
        if m:
            out.append(Token("name", m.group(), m.group(), i + 1))
            i = m.end()
            continue
        for op in _OPERATORS:
            if text.startswith(op, i):
                out.append(Token("op", op, op, i + 1))
                i += len(op)
                break
        else:
            what = "an assignment" if c == "=" else f"the character {c!r}"
            raise ExpressionSyntaxError(f"{what} is not part of the expression language", i + 1)
    out.append(Token("end", "", None, n + 1))
    return out


def _string(text: str, start: int) -> tuple[str, int]:
    """The value of the quoted string starting at ``start`` and the index after its closing quote."""
    quote, i, parts = text[start], start + 1, []
    while i < len(text):
        c = text[i]
        if c == quote:
            return "".join(parts), i + 1
        if c == "\\":
            if i + 1 >= len(text):
                break
            e = text[i + 1]
            if e == "u":
                digits = text[i + 2 : i + 6]
                if len(digits) != 4 or not all(d in "0123456789abcdefABCDEF" for d in digits):
                    raise ExpressionSyntaxError("a \\u escape needs four hexadecimal digits", i + 1)
                parts.append(chr(int(digits, 16)))
                i += 6
                continue
            if e not in _ESCAPES:
                raise ExpressionSyntaxError(f"unknown escape \\{e} in a string", i + 1)
            parts.append(_ESCAPES[e])
            i += 2
            continue
        if c == "$" and quote == '"':
            raise ExpressionSyntaxError("'$' in a double-quoted string is Groovy interpolation, which is not part of "
                                        "the expression language (use single quotes, or \\$)", i + 1)
        parts.append(c)
        i += 1
    raise ExpressionSyntaxError("a string is not closed", start + 1)
