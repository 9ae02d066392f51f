"""The error a DDL statement the model cannot understand raises."""

from __future__ import annotations

from cdc_mysql.model import TableId


class UnparseableDdl(Exception):
    """A DDL statement touching tables that could not be understood; ``tables`` names them where known."""

    def __init__(self, statement: str, reason: str, tables: list[TableId] | None = None):
        self.statement = statement
        self.reason = reason
        self.tables = tables or []
        super().__init__(f"cannot parse DDL statement ({reason}): {statement}")
