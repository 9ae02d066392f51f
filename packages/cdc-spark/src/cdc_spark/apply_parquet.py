"""Applying reduced changes to a Parquet table: affected files rewritten, a manifest swapped atomically.

The table is a directory of Parquet files plus ``_cdc_manifest.json`` (the live files and the
applied state). A change writes new files, then replaces the manifest in one rename, then
deletes the files it replaced; files a crash left behind are not in the manifest and are removed
by the next call.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

if TYPE_CHECKING:
    from cdc_spark.apply import AppliedState, Changes

MANIFEST = "_cdc_manifest.json"


def _manifest(path: str) -> dict:
    try:
        with open(os.path.join(path, MANIFEST)) as f:
            return json.load(f)
    except FileNotFoundError:
        return {"files": [], "position": 0, "snapshot_id": None}


def read_state(path: str) -> AppliedState:
    """The applied state in the manifest."""
    from cdc_spark.apply import AppliedState

    m = _manifest(path)
    return AppliedState(int(m.get("position", 0)), m.get("snapshot_id"))


def _key_strings(table: pa.Table, keys: list[str]) -> pa.Array:
    """One string per row joining its key values (for membership tests on composite keys)."""
    parts = [pc.cast(table[k], pa.string()) for k in keys]
    return parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, "\x1f")


def _write_file(path: str, rows: pa.Table) -> str:
    name = f"part-{uuid.uuid4().hex}.parquet"
    pq.write_table(rows, os.path.join(path, name))
    return name


def write(path: str, keys: list[str], changes: Changes) -> None:
    """Rewrite the files holding changed keys, add the upserts, swap the manifest, drop replaced files."""
    os.makedirs(path, exist_ok=True)
    manifest = _manifest(path)
    live = [] if changes.replace else list(manifest["files"])
    _remove_orphans(path, set(manifest["files"]))
    changed = pc.unique(pa.concat_arrays([
        _key_strings(changes.upserts, keys).combine_chunks() if changes.upserts.num_rows else pa.array([], pa.string()),
        _key_strings(changes.deletes, keys).combine_chunks() if changes.deletes.num_rows else pa.array([], pa.string()),
    ]))
    keep, added = [], []
    for name in live:
        existing = pq.read_table(os.path.join(path, name))
        hit = pc.is_in(_key_strings(existing, keys), value_set=changed)
        if not pc.any(hit).as_py():
            keep.append(name)
            continue
        rest = existing.filter(pc.invert(hit))
        if rest.num_rows:
            added.append(_write_file(path, rest))
    if changes.upserts.num_rows:
        added.append(_write_file(path, changes.upserts))
    new = {"files": keep + added, "position": changes.state.position, "snapshot_id": changes.state.snapshot_id}
    tmp = os.path.join(path, f".{MANIFEST}.{uuid.uuid4().hex}")
    with open(tmp, "w") as f:
        json.dump(new, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(path, MANIFEST))
    _remove_orphans(path, set(new["files"]))


def _remove_orphans(path: str, live: set[str]) -> None:
    for name in os.listdir(path):
        if name.endswith(".parquet") and name not in live:
            os.remove(os.path.join(path, name))


def read_table(path: str) -> pa.Table:
    """The table's current rows (the files the manifest lists)."""
    files = _manifest(path)["files"]
    if not files:
        return pa.table({})
    return pa.concat_tables([pq.read_table(os.path.join(path, f)) for f in files], promote_options="default")
