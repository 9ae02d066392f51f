"""A compiled expression: its text, the language it was configured under, and its evaluation on a record."""

from __future__ import annotations

from typing import Any

from cdc_core.events import ChangeRecord
from cdc_core.expressions.compiler import compile_tree
from cdc_core.expressions.errors import ExpressionSyntaxError
from cdc_core.expressions.parser import parse

#: The ``language`` values that select cdc's expression language. The JSR-223 names are
#: Debezium's; the expressions they take are read as cdc's language, never run as scripts.
LANGUAGES = ("cdc", "jsr223.groovy", "jsr223.graal.js", "jsr223.javascript", "jsr223.js", "jsr223.nashorn")


class Expression:
    """An expression compiled once (``Expression(text)``, ExpressionSyntaxError if it is not in the language).

    ``evaluate(record)`` is a call of the compiled closure tree: no parsing, no lookups by name.
    """

    __slots__ = ("text", "evaluate")

    def __init__(self, text: str):
        self.text = text
        self.evaluate = compile_tree(parse(text))

    def __repr__(self) -> str:
        return f"Expression({self.text!r})"

    def __call__(self, record: ChangeRecord) -> Any:
        """The expression's value for ``record`` (EvaluationError if it fails on it)."""
        return self.evaluate(record)


def language_problem(language: Any) -> str | None:
    """Why ``language`` cannot be used (None if it can)."""
    if language is None or str(language).strip() == "":
        return ("is required (jsr223.groovy, jsr223.graal.js or cdc; the expression is read as cdc's expression "
                "language, never run as a script)")
    if str(language).strip().lower() not in LANGUAGES:
        return (f"{str(language)!r} is not supported: cdc runs no scripts; it reads the expression in its own "
                f"language under any of: {', '.join(LANGUAGES)}")
    return None


__all__ = ["Expression", "ExpressionSyntaxError", "LANGUAGES", "language_problem"]
