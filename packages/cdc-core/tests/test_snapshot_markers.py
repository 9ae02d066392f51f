"""Debezium's source.snapshot markers as a blocking or initial snapshot streams its tables' rows."""

from __future__ import annotations

import pytest

from cdc_core.events import RawChange
from cdc_core.relational import Column, Table, TableId
from cdc_core.schema import INT32
from cdc_core.snapshot.markers import marked_batches

TABLE = Table(TableId(None, "public", "t"), [Column("id", "int4", INT32, int, position=1, optional=False)], ["id"])


def _rows(*ids: int) -> list[RawChange]:
    source = {"snapshot": "true"}
    return [RawChange(TABLE, "r", None, (i,), source, None) for i in ids]


@pytest.mark.parametrize("tables, expected", [
    ([[1, 2, 3]], ["first", "true", "last"]),
    ([[1]], ["last"]),
    ([[1], [2, 3]], ["first", "first_in_data_collection", "last"]),
    # Debezium 2.7's precedence: last, first, last_in_data_collection, first_in_data_collection.
    ([[1, 2], [3], [], [4, 5]],
     ["first", "last_in_data_collection", "last_in_data_collection", "first_in_data_collection", "last"]),
    ([[], [1, 2], []], ["first", "last"]),
    ([[], []], []),
])
def test_markers_follow_debeziums_precedence(tables, expected):
    """Each READ gets the marker Debezium gives it; the batches hold every row once, in order."""
    batches = list(marked_batches([_rows(*t) for t in tables], 2, lambda: False))
    rows = [r for b in batches for r in b]
    assert [r.after[0] for r in rows] == [i for t in tables for i in t]
    assert [r.source["snapshot"] for r in rows] == expected
    assert all(len(b) <= 2 for b in batches[:-1])


def test_rows_in_the_middle_keep_their_source_block():
    """Unmarked rows share the table's source dict (no copy per row)."""
    rows = _rows(1, 2, 3, 4)
    out = [r for b in marked_batches([rows], 10, lambda: False) for r in b]
    assert out[1].source is rows[1].source and out[2].source is rows[2].source


def test_a_stop_ends_after_the_full_batch():
    """Once stopped() is true the rows after the yielded batch are not read."""
    batches = list(marked_batches([_rows(*range(1, 11))], 3, lambda: True))
    assert len(batches) == 1 and [r.after[0] for r in batches[0]] == [1, 2, 3]
