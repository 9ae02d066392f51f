"""Incremental snapshots on YugabyteDB: PostgreSQL's, with YugabyteDB's names and cells; no blocking snapshots."""

from __future__ import annotations

from typing import Any

from cdc_core.config import Config
from cdc_core.relational import Table
from cdc_postgres.incremental import PostgresChunkReader, PostgresIncrementalSource

from cdc_yugabyte import config as ybc
from cdc_yugabyte.source import renamed
from cdc_yugabyte.yboutput import wrapped_table


class YugabyteChunkReader(PostgresChunkReader):
    """PostgreSQL's chunk reader whose READ events say ``YugabyteDB``."""

    def read_chunk(self, *args: Any, **kwargs: Any):
        """The chunk's rows (they share one source block)."""
        chunk = super().read_chunk(*args, **kwargs)
        if chunk.rows:
            renamed(chunk.rows[0].source)
        return chunk


class YugabyteIncrementalSource(PostgresIncrementalSource):
    """The YugabyteDB connector's ad hoc snapshot capability (``cdc_core.incremental.spi``)."""

    def __init__(self, config: Config, log: Any):
        self.yboutput = config.get(ybc.PLUGIN_NAME) == "yboutput"
        super().__init__(ybc.for_postgres(config), log)

    def captured_tables(self) -> list[Table]:
        """The captured tables, as cells under yboutput."""
        tables = super().captured_tables()
        return [wrapped_table(t) for t in tables] if self.yboutput else tables

    def reader(self) -> YugabyteChunkReader:
        """A chunk reader on a new connection."""
        reader = super().reader()
        reader.__class__ = YugabyteChunkReader  # the same reader, its READs renamed
        return reader

    def blocking_snapshot(self, tables, offset_for, stopped):
        """None: the chapter has incremental snapshots only; a blocking signal is logged and ignored."""
        self.log.warning("blocking snapshots are not part of the YugabyteDB connector (only incremental ones); "
                         "the signal for %s is ignored", ", ".join(str(t.id) for t, _ in tables))
        return iter(())


#: The capability, found by ``cdc_core.incremental.spi.incremental_source_for``.
incremental_snapshot_source = YugabyteIncrementalSource
