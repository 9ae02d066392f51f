"""Snapshots: the Snapshotter, SnapshotQuery and SnapshotLock SPIs, the built-in modes, and their selection."""

from cdc_core.snapshot.select import snapshot_lock, snapshot_query, snapshotter
from cdc_core.snapshot.spi import SnapshotLock, SnapshotQuery, Snapshotter

__all__ = ["SnapshotLock", "SnapshotQuery", "Snapshotter", "snapshot_lock", "snapshot_query", "snapshotter"]
