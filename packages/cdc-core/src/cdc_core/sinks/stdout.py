"""The stdout sink: one JSON object per line on standard output."""

from __future__ import annotations

import sys
from typing import BinaryIO, ClassVar

from cdc_core.config import Config
from cdc_core.errors import SinkError
from cdc_core.sinks.lines import record_line
from cdc_core.spi.sink import SinkRecord


class StdoutSink:
    """Writes each record as a JSON line to standard output and flushes after every batch."""

    name: ClassVar[str] = "stdout"

    def __init__(self, config: Config | None = None, stream: BinaryIO | None = None):
        self._out = stream if stream is not None else sys.stdout.buffer

    def write(self, batch: list[SinkRecord]) -> None:
        """Write and flush a batch."""
        try:
            self._out.write(b"".join(map(record_line, batch)))
            self._out.flush()
        except (OSError, ValueError) as e:
            raise SinkError(f"stdout sink: cannot write: {e}") from e

    def close(self) -> None:
        """Flush standard output."""
        try:
            self._out.flush()
        except (OSError, ValueError):
            pass
