"""Batch reads: a consistent snapshot as a DataFrame, its chunks read in parallel by executors."""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from cdc_core.schema import Schema
from cdc_spark.encoding import RowEncoder
from cdc_spark.holder import hold_snapshot
from cdc_spark.options import parse_options
from cdc_spark.partitions import ChunkPartition, read_chunk
from cdc_spark.runtime import tune_gc

#: The position of every row of a batch read (one snapshot, one position).
SNAPSHOT_POSITION = 1


class CdcBatchReader(DataSourceReader):
    """Plans the snapshot's chunks (held by a separate process) and reads one chunk per partition."""

    def __init__(self, options: dict[str, str], schema: StructType, value_schema: Schema | None):
        self.raw_options = dict(options)
        self.options = parse_options(self.raw_options)
        self.schema = schema
        self.value_schema = value_schema

    def partitions(self) -> list[InputPartition]:
        """One partition per chunk of a snapshot held until every chunk is read."""
        tables = [self.options.table] if self.options.table else None
        plan, done = hold_snapshot(self.raw_options, tables, self.options.snapshot_chunk_rows,
                                   self.options.snapshot_hold_seconds)
        return [ChunkPartition(c, SNAPSHOT_POSITION, done=done) for c in plan.chunks]

    def read(self, partition: InputPartition) -> Any:
        """Arrow batches of one chunk's ``op: r`` events."""
        assert isinstance(partition, ChunkPartition)
        tune_gc()
        encoder = RowEncoder(self.schema, self.value_schema, self.options.key_schemas, self.options.value_schemas)
        yield from read_chunk(self.options, partition.chunk, partition.position, encoder, done=partition.done)
