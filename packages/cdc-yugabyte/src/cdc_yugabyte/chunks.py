"""YugabyteDB's chunked snapshot (Spark): PostgreSQL's (``cdc_postgres.chunks``) with YugabyteDB's names and cells.

On a PostgreSQL stand-in it runs PostgreSQL's exported-snapshot mechanism; YugabyteDB's own
consistent-snapshot slot options are not implemented (see the README).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg

from cdc_core.config import Config
from cdc_core.events import Checkpoint, RawChange
from cdc_core.relational import Table
from cdc_core.spi.chunks import Chunk
from cdc_core.spi.connector import ConnectorContext
from cdc_postgres.chunks import PostgresSnapshotChunks

from cdc_yugabyte import config as ybc
from cdc_yugabyte.source import renamed
from cdc_yugabyte.yboutput import wrapped_table


class YugabyteSnapshotChunks(PostgresSnapshotChunks):
    """The SnapshotChunks capability of the YugabyteDB connector."""

    def __init__(self, config: Config, log: Any = None):
        self.yb_config = config
        self.yboutput = config.get(ybc.PLUGIN_NAME) == "yboutput"
        super().__init__(ybc.for_postgres(config), log)

    def _tables(self, conn: psycopg.Connection, tables: list[str] | None) -> list[Table]:
        """The captured tables, as cells under yboutput."""
        found = super()._tables(conn, tables)
        return [wrapped_table(t) for t in found] if self.yboutput else found

    def _prepare_connector(self) -> None:
        """The YugabyteDB connector's own start (its checks, keyless tables refused, the publication)."""
        from cdc_yugabyte.connector import YugabyteDBConnector

        connector = YugabyteDBConnector(self.yb_config, ConnectorContext(log=self.log))
        self.slot_plugin = connector.slot_plugin()
        try:
            connector.start(None)
        finally:
            connector.close()

    @classmethod
    def read_chunk(cls, config: Config, chunk: Chunk) -> Iterator[list[RawChange | Checkpoint]]:
        """PostgreSQL's chunk read; its READs say ``YugabyteDB`` and carry cells under yboutput."""
        cells = config.get(ybc.PLUGIN_NAME) == "yboutput"
        wrapped: dict[int, Table] = {}
        for batch in super().read_chunk(ybc.for_postgres(config), chunk):
            out = []
            for change in batch:
                if isinstance(change, RawChange):
                    renamed(change.source)
                    if cells:
                        table = wrapped.get(id(change.table))
                        if table is None:
                            table = wrapped[id(change.table)] = wrapped_table(change.table)
                        change = change._replace(table=table)
                out.append(change)
            yield out


#: The capability, found by ``cdc_core.spi.chunks.snapshot_chunks_for``.
snapshot_chunks = YugabyteSnapshotChunks
