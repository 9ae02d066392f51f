"""Which databases and tables are captured: database lists, table lists, built-in databases."""

from __future__ import annotations

import re

from cdc_core.config import Config
from cdc_core.filters import TableFilter

from cdc_mysql import config as myc
from cdc_mysql.model import TableId


class CaptureFilter:
    """``database.include/exclude.list`` on the database name and ``table.include/exclude.list`` on ``db.table``."""

    def __init__(self, config: Config):
        self.db_include: list[re.Pattern[str]] = config.get(myc.DATABASE_INCLUDE) or []
        self.db_exclude: list[re.Pattern[str]] = config.get(myc.DATABASE_EXCLUDE) or []
        self.tables = TableFilter(config)
        self.ignore_builtin = config.get(myc.TABLE_IGNORE_BUILTIN)
        #: ``includes`` by table: the lists are fixed for the connector's life, and the streamer asks for every
        #: rows event (a few regular expressions each time were 4.5% of a drain of single-row transactions).
        self._included: dict[TableId, bool] = {}

    def includes_database(self, database: str) -> bool:
        """True if tables of ``database`` may be captured."""
        if self.ignore_builtin and database.lower() in myc.BUILTIN_DATABASES:
            return False
        if self.db_include:
            return any(p.fullmatch(database) for p in self.db_include)
        return not any(p.fullmatch(database) for p in self.db_exclude)

    def includes(self, table: TableId) -> bool:
        """True if ``table`` is captured."""
        found = self._included.get(table)
        if found is None:
            found = self._included[table] = self._includes(table)
        return found

    def _includes(self, table: TableId) -> bool:
        if not self.includes_database(table.database):
            return False
        name = f"{table.database}.{table.table}"
        if self.tables.table_include:
            return any(p.fullmatch(name) for p in self.tables.table_include)
        return not any(p.fullmatch(name) for p in self.tables.table_exclude)
