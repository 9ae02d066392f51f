"""The file sink: one ``<topic>.jsonl`` file per topic under ``debezium.sink.file.dir``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO, ClassVar

from cdc_core.config import Config, ConfigField, Fields
from cdc_core.errors import SinkError
from cdc_core.sinks.lines import record_line
from cdc_core.spi.sink import SinkRecord

DIR = ConfigField("dir", "string", required=True, doc="Directory of the per-topic .jsonl files.")
FSYNC = ConfigField("fsync", "boolean", True, doc="fsync each file after every batch before acknowledging it.")


class FileSink:
    """Appends each record as a JSON line to ``<dir>/<topic>.jsonl``; a batch is acknowledged once fsynced."""

    name: ClassVar[str] = "file"
    fields: ClassVar[Fields] = Fields([DIR, FSYNC])

    def __init__(self, config: Config):
        config.validate(self.fields)
        self.dir = Path(config.get(DIR))
        self._fsync = config.get(FSYNC)
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise SinkError(f"file sink: cannot create directory {self.dir}: {e.strerror}") from e
        self._files: dict[str, BinaryIO] = {}

    def _file(self, topic: str) -> BinaryIO:
        f = self._files.get(topic)
        if f is None:
            if "/" in topic or topic in (".", ".."):
                raise SinkError(f"file sink: topic {topic!r} cannot be used as a file name")
            f = self._files[topic] = open(self.dir / f"{topic}.jsonl", "ab")
        return f

    def write(self, batch: list[SinkRecord]) -> None:
        """Append a batch, grouped per topic, then flush and fsync every file it touched."""
        by_topic: dict[str, list[bytes]] = {}
        for r in batch:
            by_topic.setdefault(r.topic, []).append(record_line(r))
        try:
            for topic, lines in by_topic.items():
                f = self._file(topic)
                f.write(b"".join(lines))
                f.flush()
                if self._fsync:
                    os.fsync(f.fileno())
        except OSError as e:
            raise SinkError(f"file sink: cannot write to {self.dir}: {e.strerror}") from e

    def close(self) -> None:
        """Close every open file."""
        for f in self._files.values():
            f.close()
        self._files.clear()
