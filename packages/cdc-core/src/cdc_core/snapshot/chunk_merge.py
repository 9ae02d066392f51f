"""Chunks serialized by worker processes merged in plan order, with the snapshot markers on the rows that carry them.

A worker returns each chunk as ``(first row, the rows in between as packed sink records, last row)``
(``cdc_core.snapshot.processes``): the edge rows come back unserialized, so this process can give a
table's first row ``first`` / ``first_in_data_collection`` and its last ``last_in_data_collection``
(Debezium's markers, as the single-process read gives them) once it knows where each table ends, even
when chunks at a table's edges are empty; they also carry the offsets. The very last row is returned
to the caller to mark ``last``.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from typing import Any

from cdc_core.snapshot.processes import SerializedRecords, packed_count, unpack


def merge_in_order(chunks: Iterable[tuple[int, tuple[Any, Any, Any]]], several: bool,
                   raw: Callable[[int, Any, str], Any], table_started: Callable[[int], None],
                   table_done: Callable[[int, int], None], stopped: Callable[[], bool]) -> Generator[list, None, Any]:
    """Yield batches (edge rows as raw changes, the rest as ``SerializedRecords``) of ``(table index, result)`` pairs.

    ``raw(table, row, marker)`` makes a raw change; ``several``: markers for several threads (no
    ``first``). Returns the last row of all (None if there was none or ``stopped()`` cut the read).
    """
    held = None  # the latest edge row, held back until we know whether it ends its table or all
    current, rows, first_overall = -1, 0, True

    def end_of_table(change: Any) -> Any:
        # Debezium's precedence: last, first, last_in_data_collection, first_in_data_collection, true.
        if change is not None and change.source["snapshot"] != "first":
            return change._replace(source={**change.source, "snapshot": "last_in_data_collection"})
        return change

    for index, (first, packed, last) in chunks:
        if index != current:
            if current >= 0:
                if rows:
                    held = end_of_table(held)
                table_done(current, rows)
            current, rows = index, 0
            table_started(index)
        if first is None:
            continue
        batch: list[Any] = []
        if held is not None:
            batch.append(held)
        if rows == 0:
            head = raw(index, first, "first" if first_overall and not several else "first_in_data_collection")
            first_overall = False
        else:
            head = raw(index, first, "true")
        rows += 1 + (packed_count(packed) if packed is not None else 0) + (last is not None)
        if last is None:
            held = head
        else:
            batch.append(head)
            held = raw(index, last, "true")
        if packed is not None:
            batch.append(SerializedRecords(unpack(packed)))
        yield batch
        if stopped():
            return None
    if stopped():
        return None
    if current >= 0:
        if rows:
            held = end_of_table(held)
        table_done(current, rows)
    return held
