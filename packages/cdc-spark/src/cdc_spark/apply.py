"""Applying one table's change rows to a Delta or Parquet table, idempotently.

Each call orders the batch by ``position``, keeps the last change per key, deletes and upserts,
and records the last applied position (and the snapshot the table was loaded from) in the same
atomic commit: re-applying a batch after a crash skips what the table already has. A batch
holding a complete consistent snapshot (rows with a ``snapshot_id`` the table was not loaded from,
e.g. the snapshot batch replayed after a crash with a fresh snapshot) replaces the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from cdc_spark import apply_delta, apply_parquet

FORMATS = ("delta", "parquet")
_NEEDED = ("op", "position", "snapshot_id", "before", "after")


@dataclass(frozen=True)
class AppliedState:
    """What a table records about the changes applied to it."""

    position: int = 0
    snapshot_id: str | None = None


@dataclass
class Changes:
    """A batch reduced to the last change per key: rows to upsert and keys to delete."""

    upserts: pa.Table
    deletes: pa.Table
    replace: bool
    state: AppliedState


def apply_changes(batch_df: Any, path: str, keys: list[str], format: str = "delta") -> AppliedState | None:
    """Apply a micro-batch of one table's change rows (``option("table", ...)``) to the table at ``path``.

    For ``foreachBatch``: ``lambda df, _: apply_changes(df, "/lake/customers", keys=["id"])``.
    Returns the new applied state, or None when the batch held nothing new.
    """
    if format not in FORMATS:
        raise ValueError(f"format: {format!r} is not one of: {', '.join(FORMATS)}")
    if not keys:
        raise ValueError("keys: name at least one key column")
    missing = [c for c in _NEEDED if c not in batch_df.columns]
    if missing:
        raise ValueError(f"apply_changes needs the columns {', '.join(missing)}: read the stream with "
                         "option('table', 'schema.table') to get the typed before/after columns")
    data = batch_df.select(*_NEEDED).toArrow()
    return apply_arrow(data, path, keys, format)


def apply_arrow(data: pa.Table, path: str, keys: list[str], format: str = "delta") -> AppliedState | None:
    """``apply_changes`` on an Arrow table of ``op, position, snapshot_id, before, after`` rows."""
    module = apply_delta if format == "delta" else apply_parquet
    changes = reduce_changes(data, keys, module.read_state(path))
    if changes is None:
        return None
    module.write(path, keys, changes)
    return changes.state


def reduce_changes(data: pa.Table, keys: list[str], state: AppliedState) -> Changes | None:
    """The last change per key among the batch's rows that are newer than ``state`` (None if none)."""
    data = data.filter(pc.is_valid(data["op"]))  # tombstones carry nothing to apply
    if data.num_rows == 0:
        return None
    after_type = data.schema.field("after").type
    unknown = [k for k in keys if after_type.get_field_index(k) < 0]
    if unknown:
        raise ValueError(f"keys: the table has no column {unknown[0]!r}")
    snap = data.filter(pc.is_valid(data["snapshot_id"]))
    replace = False
    snapshot_id = state.snapshot_id
    floor = state.position
    if snap.num_rows:
        snapshot_id = snap["snapshot_id"][0].as_py()
        if snapshot_id != state.snapshot_id:
            replace, floor = True, -1  # a snapshot this table was not loaded from: it replaces the table
    data = data.filter(pc.greater(data["position"], pa.scalar(floor, pa.int64())))
    if data.num_rows == 0:
        return None
    data = data.append_column("__row", pa.array(range(data.num_rows), pa.int64()))
    data = data.sort_by([("position", "ascending"), ("__row", "ascending")])
    after = data["after"].combine_chunks()
    before = data["before"].combine_chunks()
    columns = {}
    for k in keys:
        a = pc.struct_field(after, k)
        b = pc.struct_field(before, k)
        columns[k] = pc.coalesce(a, b)
    keyed = pa.table({**columns, "__order": pa.array(range(data.num_rows), pa.int64())})
    last = keyed.group_by(keys).aggregate([("__order", "max")])["__order_max"]
    chosen = data.take(last)
    is_delete = pc.equal(chosen["op"], "d")
    upserts = pa.Table.from_struct_array(chosen.filter(pc.invert(is_delete))["after"].combine_chunks())
    deleted = chosen.filter(is_delete)
    delete_keys = pa.table({k: pc.coalesce(pc.struct_field(deleted["before"].combine_chunks(), k),
                                           pc.struct_field(deleted["after"].combine_chunks(), k)) for k in keys})
    if deleted.num_rows == 0:
        delete_keys = pa.table({k: pa.array([], after_type.field(k).type) for k in keys})
    position = max(int(pc.max(data["position"]).as_py()), state.position)
    return Changes(upserts, delete_keys, replace, AppliedState(position, snapshot_id))
