"""apply_changes on Arrow data: last change per key, deletes, idempotent re-application, snapshot replacement."""

from __future__ import annotations

import pyarrow as pa
import pytest

from cdc_spark import apply_delta, apply_parquet
from cdc_spark.apply import apply_arrow

ROW = pa.struct([("id", pa.int32()), ("name", pa.string())])
SCHEMA = pa.schema([("op", pa.string()), ("position", pa.int64()), ("snapshot_id", pa.string()),
                    ("before", ROW), ("after", ROW)])
READERS = {"delta": apply_delta.read_table, "parquet": apply_parquet.read_table}


def batch(*rows) -> pa.Table:
    """Rows of (op, position, snapshot_id, before, after)."""
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA)


def contents(path: str, fmt: str) -> dict[int, str]:
    table = READERS[fmt](path)
    return {r["id"]: r["name"] for r in table.to_pylist()}


@pytest.mark.parametrize("fmt", ["delta", "parquet"])
def test_last_change_per_key_deletes_and_idempotence(tmp_path, fmt):
    path = str(tmp_path / "t")
    snap = batch(("r", 1, "s1", None, {"id": 1, "name": "a"}), ("r", 1, "s1", None, {"id": 2, "name": "b"}),
                 ("r", 1, "s1", None, {"id": 3, "name": "c"}))
    apply_arrow(snap, path, ["id"], fmt)
    assert contents(path, fmt) == {1: "a", 2: "b", 3: "c"}
    changes = batch(("u", 3, None, {"id": 1, "name": "a"}, {"id": 1, "name": "a2"}),
                    ("c", 2, None, None, {"id": 4, "name": "d"}),
                    ("d", 4, None, {"id": 2, "name": None}, None),
                    (None, 5, None, None, None),  # the delete's tombstone
                    ("u", 6, None, None, {"id": 1, "name": "a3"}),
                    ("d", 7, None, {"id": 4, "name": None}, None),
                    ("c", 8, None, None, {"id": 4, "name": "d2"}))
    state = apply_arrow(changes, path, ["id"], fmt)
    assert state.position == 8
    assert contents(path, fmt) == {1: "a3", 3: "c", 4: "d2"}
    assert apply_arrow(changes, path, ["id"], fmt) is None  # re-applied after a crash: nothing changes
    assert apply_arrow(snap, path, ["id"], fmt) is None  # the same snapshot again: already applied
    assert contents(path, fmt) == {1: "a3", 3: "c", 4: "d2"}


@pytest.mark.parametrize("fmt", ["delta", "parquet"])
def test_a_new_snapshot_replaces_the_table(tmp_path, fmt):
    path = str(tmp_path / "t")
    apply_arrow(batch(("r", 1, "s1", None, {"id": 1, "name": "a"}), ("r", 1, "s1", None, {"id": 2, "name": "b"})),
                path, ["id"], fmt)
    # The snapshot batch replayed after a crash with a fresh snapshot in which id 2 is gone.
    apply_arrow(batch(("r", 1, "s2", None, {"id": 1, "name": "a"})), path, ["id"], fmt)
    assert contents(path, fmt) == {1: "a"}


def test_unknown_key_is_named(tmp_path):
    with pytest.raises(ValueError, match="nope"):
        apply_arrow(batch(("r", 1, "s1", None, {"id": 1, "name": "a"})), str(tmp_path / "t"), ["nope"], "delta")
