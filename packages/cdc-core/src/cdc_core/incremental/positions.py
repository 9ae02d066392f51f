"""Position watermarks: chunk windows opened and closed by where the stream is against the server's log positions.

Debezium's read-only incremental snapshot (MySqlReadOnlyIncrementalSnapshotChangeEventSource), for
any source with ``watermarks = "position"``: the low watermark is the server's executed position
before a chunk's read, the high one the position after it. A log event whose transaction is not
in the low watermark opens the window (its keys supersede the chunk's rows); the first transaction
not in the high watermark closes it before that event, and so does a checkpoint whose recorded
position contains the whole high watermark (a commit, or an idle heartbeat).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from cdc_core.events import RawChange
from cdc_core.incremental.spi import PositionWatermarks
from cdc_core.incremental.window import Window


class PositionWindows:
    """The window decisions of a position-watermark source (connector thread only)."""

    def __init__(self, source: PositionWatermarks):
        self.event_position = source.event_position
        self.after = source.after
        self.caught_up = source.caught_up
        self._last_tx: Any = None

    def passed(self, change: RawChange, windows: Iterable[Window]) -> tuple[list[Window], list[Window]]:
        """The windows whose high watermark ``change``'s transaction is past (close them before it), and the
        unopened ones whose low watermark it is past (open them). Each transaction is judged at its first event."""
        tx = change.transaction_id
        if tx is not None and tx == self._last_tx:
            return [], []
        position = self.event_position(change)
        if position is None:
            return [], []
        self._last_tx = tx
        close: list[Window] = []
        opened: list[Window] = []
        after = self.after
        for w in windows:
            if w.high is not None and after(w.high, position):
                close.append(w)
            elif not w.opened and w.low is not None and after(w.low, position):
                opened.append(w)
        return close, opened

    def reached(self, offset: dict[str, Any], windows: Iterable[Window]) -> list[Window]:
        """The ready windows whose high watermark the stream position of a checkpoint ``offset`` contains."""
        return [w for w in windows if w.high is not None and self.caught_up(w.high, offset)]

    def since(self, low: Any, order: deque[Any], positions: Mapping[Any, Any]) -> Iterator[Any]:
        """The transactions of the lookback (newest first) not contained in ``low``.

        The stream runs in log order and a watermark contains a prefix of the log, so the walk
        stops at the first transaction ``low`` contains.
        """
        for tx in reversed(order):
            position = positions.get(tx)
            if position is None:
                continue
            if not self.after(low, position):
                return
            yield tx
