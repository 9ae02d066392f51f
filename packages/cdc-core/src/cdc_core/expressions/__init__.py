"""A small expression language for Filter and ContentBasedRouter: parsed and compiled, never eval'd or run as a script.

``tokens`` (text to tokens), ``parser`` (tokens to a syntax tree, grammar in its docstring),
``compiler`` (the tree to closures; how a null or missing field is handled), ``values`` (the
operators' meaning), ``expression`` (the compiled expression and the accepted ``language`` values).
"""

from __future__ import annotations

from cdc_core.expressions.errors import EvaluationError, ExpressionSyntaxError
from cdc_core.expressions.expression import LANGUAGES, Expression, language_problem

__all__ = ["EvaluationError", "Expression", "ExpressionSyntaxError", "LANGUAGES", "language_problem"]
