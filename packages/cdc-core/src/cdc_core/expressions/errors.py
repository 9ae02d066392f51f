"""The two ways an expression fails: refused when compiled, or failing on one record."""

from __future__ import annotations

from cdc_core.errors import CdcError


class ExpressionSyntaxError(CdcError):
    """The text is not an expression of the language; ``column`` (1-based) is where the problem starts."""

    def __init__(self, reason: str, column: int):
        self.reason = reason
        self.column = column
        super().__init__(f"{reason} at column {column}")

    def __reduce__(self) -> tuple[type, tuple[str, int]]:
        """Pickled with its reason and column (a worker process's error reaches the engine so)."""
        return type(self), (self.reason, self.column)


class EvaluationError(CdcError):
    """An expression failed on a record (a field of null, a field the record does not have, mixed types).

    ``column`` (1-based) is where the failing part of the expression starts.
    """

    def __init__(self, reason: str, column: int):
        self.reason = reason
        self.column = column
        super().__init__(f"{reason} (at column {column})")

    def __reduce__(self) -> tuple[type, tuple[str, int]]:
        """Pickled with its reason and column (a worker process's error reaches the engine so)."""
        return type(self), (self.reason, self.column)
