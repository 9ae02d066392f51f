"""What Spark ships to executors: rows already read by the driver, or a snapshot chunk to read there."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from cdc_core.config import common
from cdc_core.envelope import EventBuilder
from cdc_core.events import ChangeRecord
from cdc_core.logs import connector_logger
from cdc_core.plugins import registry
from cdc_core.serializers.json import JsonSerializer
from cdc_core.spi.chunks import Chunk, ChunkRead, snapshot_chunks_for
from cdc_core.spi.connector import ConnectorContext
from cdc_core.transforms.chain import build_chain
from cdc_spark.options import SourceOptions
from cdc_spark.encoding import RowEncoder
from cdc_spark.rows import EventRow

#: Rows per partition of a streaming batch.
ROWS_PER_PARTITION = 20_000


class RowsPartition(InputPartition):
    """Events the driver read from the connector, carried to an executor as compressed Arrow IPC."""

    def __init__(self, data: bytes, count: int, frames: list[bytes]):
        super().__init__(count)
        self.data = data
        self.count = count
        self.frames = frames


class ChunkPartition(InputPartition):
    """One snapshot chunk, read by the executor inside the held snapshot.

    ``report``: where to send the chunk reader's ``ChunkRead`` (``cdc_spark.reports``), if the plan wants them;
    ``done``: where to report that the chunk's rows were read, if the snapshot's holder must know (``cdc_spark.holder``).
    """

    def __init__(self, chunk: Chunk, position: int, report: dict[str, Any] | None = None,
                 done: dict[str, Any] | None = None):
        super().__init__(f"{chunk.table}#{chunk.index}")
        self.chunk = chunk
        self.position = position
        self.report = report
        self.done = done


def rows_partitions(rows: list[EventRow], encoder: RowEncoder, frames: list[bytes],
                    per_partition: int = ROWS_PER_PARTITION) -> list[InputPartition]:
    """Split driver-side rows into partitions (in order), each encoded once on the driver."""
    return [RowsPartition(encoder.ipc(part), len(part), frames)
            for part in (rows[i : i + per_partition] for i in range(0, len(rows), per_partition))]


def read_chunk(options: SourceOptions, chunk: Chunk, position: int, encoder: RowEncoder,
               report: dict[str, Any] | None = None, done: dict[str, Any] | None = None) -> Iterator[pa.RecordBatch]:
    """Read one chunk through the connector's capability, build its events as the engine would, as Arrow.

    A ``ChunkRead`` the reader yields goes to ``report`` (the driver) before any row; once every row was
    read, ``{"read": true}`` goes to ``done`` (the snapshot's holder), if given.
    """
    cls = options.connector_class
    chunks_cls = snapshot_chunks_for(cls)
    assert chunks_cls is not None
    config = options.config
    name = config.get(common.NAME) or config.get(common.TOPIC_PREFIX)
    connector = cls(config, ConnectorContext(log=connector_logger(f"cdc.{cls.name}", cls.name, name, "snapshot")))
    builder = EventBuilder(config, cls.source_schema, connector.partition(),
                           catalog_in_data_collection=getattr(cls, "catalog_in_data_collection", False))
    chain = build_chain(config, registry())  # transforms=: applied as the engine applies them (None: none)
    serializer = JsonSerializer(options.key_schemas, options.value_schemas,
                                key_replace_null_with_default=options.key_replace_null_with_default,
                                value_replace_null_with_default=options.value_replace_null_with_default)
    for raw in chunks_cls.read_chunk(config, chunk):
        if raw and raw[0].__class__ is ChunkRead:
            if report is not None:
                from cdc_spark.reports import send_report

                for read in raw:
                    send_report(report, chunk.snapshot, read.table, read.index, read.position)
            continue
        records = [r for r in builder.build(raw) if r.__class__ is ChangeRecord]
        if chain is not None:
            records = chain.apply_records(records)
        if records:
            yield encoder.records_batch(records, serializer.serialize(records), position, chunk.snapshot)
    if done is not None:
        from cdc_spark.reports import send_report

        send_report(done, chunk.snapshot, chunk.table, chunk.index, {"read": True})
