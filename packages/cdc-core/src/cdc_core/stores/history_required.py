"""Debezium's start check of a historized connector: stored offsets with no schema history stop the start.

As Debezium 2.7.4's ``BaseSourceTask.validateAndLoadSchemaHistory``: an offset that is not an
unfinished snapshot needs the history (``historyExists``: a file that is there and not empty);
without it the start fails ("The db history topic is missing ...") unless the snapshot mode
rebuilds the schema on a schema error (``recovery``, ``when_needed``). cdc's implicit memory
history (no ``schema.history.internal.file.filename``) keeps nothing between runs, so it is not
checked (the connector takes the structures from the catalog, as before).
"""

from __future__ import annotations

from typing import Any

from cdc_core.errors import ConnectorError


def describe(store: Any) -> str:
    """The history store as a message names it (a file's path)."""
    path = getattr(store, "path", None)
    if path is not None:
        return f"the schema history file {path} (schema.history.internal.file.filename)"
    return f"the schema history store ({getattr(store, 'name', type(store).__name__)})"


def require_history(store: Any, offset: dict[str, Any] | None, snapshotter: Any) -> None:
    """Raise ConnectorError if ``offset`` needs the history and ``store`` holds none (see the module)."""
    if offset is None or getattr(store, "name", None) == "memory":
        return
    if offset.get("snapshot") and not offset.get("snapshot_completed"):
        return  # an unfinished snapshot is taken again, and records the history again
    if store.exists() or snapshotter.should_snapshot_on_schema_error():
        return
    raise ConnectorError(
        f"offsets exist but {describe(store)} is missing or empty, so the captured tables' structures at the stored "
        "position are unknown. Restore it, or set snapshot.mode=recovery to rebuild it from the current table "
        "definitions (safe only if no schema changed since the last stop), or delete the offsets to start over.")
