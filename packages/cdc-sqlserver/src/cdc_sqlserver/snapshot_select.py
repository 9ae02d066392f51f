"""The SELECT a SQL Server snapshot reads a table with, as Debezium 2.7.4's SqlServerSnapshotChangeEventSource.

``snapshot.select.statement.overrides`` lists tables (``schema.table`` or ``db.schema.table``, each part plain or
bracketed: ``[dbo].[user detail]``; blanks around the entries ignored), each with its statement in
``snapshot.select.statement.overrides.<entry as written>``; a listed table without one is warned about and read
as usual (SqlServerConnectorConfig.getSnapshotSelectOverridesByTable). An override's ``*`` becomes the snapshot's
column list (enhanceOverriddenSelect), and it runs as written (an ``ORDER BY`` is kept). Without an override, the
SnapshotQuery of ``snapshot.query.mode`` gives it (``select_all``: ``SELECT <columns> FROM [db].[schema].[table]``;
a custom one may give None: the table's rows are not read).
"""

from __future__ import annotations

from typing import Any

from cdc_core.config import Config, common
from cdc_core.relational import TableId
from cdc_sqlserver.catalog import quote

PREFIX = "snapshot.select.statement.overrides"


def parse_table_id(text: str) -> tuple[str, ...]:
    """The dot-separated parts of a table name, ``[...]`` and ``"..."`` parts kept whole (Debezium's TableId.parse
    with SqlServerTableIdPredicates)."""
    parts: list[str] = []
    current: list[str] = []
    closing: str | None = None
    for ch in text.strip():
        if closing is not None:
            if ch == closing:
                closing = None
            else:
                current.append(ch)
        elif ch in "[\"":
            closing = "]" if ch == "[" else '"'
        elif ch == ".":
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return tuple(parts)


def overrides(config: Config, log: Any) -> dict[tuple[str | None, str | None, str], str]:
    """``{(catalog, schema, table): statement}`` of the listed tables that have a statement."""
    out: dict[tuple[str | None, str | None, str], str] = {}
    for entry in (e.strip() for e in config.get(common.SNAPSHOT_SELECT_OVERRIDES) or []):
        if not entry:
            continue
        statement = config.get(f"{PREFIX}.{entry}")
        if statement is None:
            log.warning("Detected %s for %s but no statement property %s.%s defined", PREFIX, entry, PREFIX, entry)
            continue
        parts = parse_table_id(entry)
        key = (None, None, parts[-1]) if len(parts) == 1 else \
            (None, parts[-2], parts[-1]) if len(parts) == 2 else (parts[-3], parts[-2], parts[-1])
        out[key] = str(statement)
    return out


def quote_table(db: str) -> Any:
    """``[db].[schema].[table]`` of a core TableId (the name a SnapshotQuery is handed, as Debezium's quoteTableName)."""
    return lambda table: f"{quote(db)}.{quote(table.schema or 'dbo')}.{quote(table.table)}"


class SnapshotSelect:
    """The snapshot SELECT of each table: its override, else the snapshot query SPI's."""

    def __init__(self, config: Config, db: str, query_spi: Any, log: Any):
        """``query_spi``: the SnapshotQuery of ``snapshot.query.mode``."""
        self.db = db
        self.query_spi = query_spi
        self.overrides = overrides(config, log)

    def override(self, table: Any) -> str | None:
        """``table``'s override statement, its ``*`` the column list; None without one (getSnapshotSelectOverridesByTable:
        the TableId with the database, then without)."""
        statement = self.overrides.get((self.db, table.id.schema, table.id.table)) or \
            self.overrides.get((None, table.id.schema, table.id.table))
        if statement is None:
            return None
        return statement.replace("*", ", ".join(quote(c.name) for c in table.columns))

    def select(self, table: Any) -> str | None:
        """The SELECT for ``table`` (a core Table); None: its rows are not read."""
        statement = self.override(table)
        if statement is not None:
            return statement
        return self.query_spi.snapshot_query(TableId(self.db, table.id.schema, table.id.table),
                                             [quote(c.name) for c in table.columns], quote_table(self.db))
