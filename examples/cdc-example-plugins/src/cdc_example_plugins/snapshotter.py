"""A custom snapshotter: ``export`` takes a full snapshot at every start and never streams.

Use it for periodic full exports: ``snapshot.mode=custom`` and ``snapshot.mode.custom.name=export``.
"""

from __future__ import annotations

from typing import ClassVar

from cdc_core.config import Config


class ExportSnapshotter:
    """Snapshot every time; stop after it."""

    name: ClassVar[str] = "export"

    def configure(self, config: Config) -> None:
        """Nothing to configure."""
        self.completed = 0

    def should_snapshot_data(self, offset_exists: bool, snapshot_in_progress: bool) -> bool:
        """Always."""
        return True

    def should_snapshot_schema(self, offset_exists: bool, snapshot_in_progress: bool) -> bool:
        """Always."""
        return True

    def should_stream(self) -> bool:
        """Never."""
        return False

    def should_snapshot_on_schema_error(self) -> bool:
        """Yes."""
        return True

    def should_snapshot_on_data_error(self) -> bool:
        """Yes."""
        return True

    def snapshot_completed(self) -> None:
        """Count completed exports."""
        self.completed += 1

    def snapshot_aborted(self) -> None:
        """Nothing to clean up."""
