"""Snapshot if the snapshotter says so, then stream: the run of a connector whose offsets mark a snapshot in progress."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from cdc_core.config import Config
from cdc_core.delays import wait_before
from cdc_core.events import Checkpoint, RawChange
from cdc_core.incremental.blocking import BLOCKING_KEY

Batch = list[RawChange | Checkpoint]


def snapshot_then_stream(snapshotter: Any, offset: dict[str, Any] | None, config: Config, stop: threading.Event,
                         log: Any, snapshot: Callable[[], Iterator[Batch]],
                         no_data_offset: Callable[[], dict[str, Any]],
                         stream: Callable[[dict[str, Any] | None], Iterator[Batch]]) -> Iterator[Batch]:
    """Snapshot if due (``snapshot.delay.ms`` first), then stream from the snapshot's last offset (``streaming.delay.ms`` first).

    A snapshot is in progress when the offset has ``snapshot`` and not ``snapshot_completed``. With
    no snapshot and no offset (``no_data``) streaming starts at ``no_data_offset()``, handed on first
    as a Checkpoint. Either way the snapshot ends with a Checkpoint that forces a heartbeat (when heartbeats are
    on), as Debezium's snapshot does. A stop during the snapshot aborts it (``snapshotter.snapshot_aborted``). The offset handed to
    ``stream`` never carries an unfinished blocking snapshot's progress (``BLOCKING_KEY``).
    """
    offset_exists = offset is not None
    in_progress = bool(offset and offset.get("snapshot") and not offset.get("snapshot_completed"))
    due = snapshotter.should_snapshot_data(offset_exists, in_progress)
    streams = snapshotter.should_stream()
    if not due and not streams:
        log.info("no snapshot is due and snapshot.mode=%s does not stream: nothing to do", snapshotter.name)
        return
    if due:
        if wait_before("snapshot", config, stop, log):
            return
        last_offset: dict[str, Any] | None = None
        for batch in snapshot():
            last_offset = batch[-1].offset if batch else last_offset
            yield batch
        if stop.is_set():
            snapshotter.snapshot_aborted()
            return
        snapshotter.snapshot_completed()
        offset = last_offset
        if offset is not None:
            yield [Checkpoint(offset, heartbeat=True)]  # the snapshot's forced heartbeat (Checkpoint.heartbeat)
        if streams and wait_before("streaming", config, stop, log):
            return
    elif offset is None:
        offset = no_data_offset()
        yield [Checkpoint(offset, heartbeat=True)]  # the schema-only snapshot's forced heartbeat
    if not streams:
        return
    if offset is not None and BLOCKING_KEY in offset:
        # An unfinished blocking snapshot's progress is the signal controller's (it runs the rest before the stream
        # is pulled): the stream resumes from the position without it, or its idle checkpoints would carry it on
        # and a restart would take the snapshot again.
        offset = {k: v for k, v in offset.items() if k != BLOCKING_KEY}
    yield from stream(offset)
