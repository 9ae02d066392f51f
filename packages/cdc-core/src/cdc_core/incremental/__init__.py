"""Ad hoc snapshots: the incremental watermark algorithm and blocking snapshots, over a connector capability."""

from cdc_core.incremental.spi import ChunkReader, ChunkRows, IncrementalSnapshotSource, incremental_source_for

__all__ = ["ChunkReader", "ChunkRows", "IncrementalSnapshotSource", "incremental_source_for"]
