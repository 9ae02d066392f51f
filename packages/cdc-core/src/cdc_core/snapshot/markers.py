"""Debezium's ``source.snapshot`` markers on a snapshot's READs: the precedence, and setting them as rows stream by."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from cdc_core.events import RawChange


def snapshot_marker(first_table: bool, last_table: bool, first_in_table: bool, last_in_table: bool) -> str:
    """Debezium's ``source.snapshot`` value for a snapshot row (its precedence: last, first, then per table).

    As Debezium 2.7's RelationalSnapshotChangeEventSource: a one-row table between others is
    ``last_in_data_collection``.
    """
    if last_in_table and last_table:
        return "last"
    if first_in_table and first_table:
        return "first"
    if last_in_table:
        return "last_in_data_collection"
    return "first_in_data_collection" if first_in_table else "true"


def marked_batches(tables: Iterable[Iterable[RawChange]], batch_size: int,
                   stopped: Callable[[], bool]) -> Iterator[list[RawChange]]:
    """Batches of the READs of ``tables`` (one iterable of rows each, in snapshot order) with their markers.

    One row is held back until the next one (or the end) says whether it ends its table or the
    snapshot; rows whose marker stays ``true`` keep their source block. Ends early, after a full
    batch, once ``stopped()``.
    """
    batch: list[RawChange] = []
    held: RawChange | None = None
    held_flags = (False, False, False)  # held row: first of the snapshot, first of its table, last of its table

    def marked(change: RawChange, last_table: bool) -> RawChange:
        first_overall, first_in_table, last_in_table = held_flags
        marker = snapshot_marker(first_overall, last_table, first_in_table, last_in_table)
        return change if marker == change.source.get("snapshot") else change._replace(
            source={**change.source, "snapshot": marker})

    for rows in tables:
        count = 0
        for change in rows:
            if held is not None:
                batch.append(marked(held, False))
            held, held_flags = change, (held is None, count == 0, False)
            count += 1
            if len(batch) >= batch_size:
                yield batch
                batch = []
                if stopped():
                    return
        if count:
            held_flags = (held_flags[0], held_flags[1], True)
    if held is not None:
        batch.append(marked(held, True))
    if batch:
        yield batch
