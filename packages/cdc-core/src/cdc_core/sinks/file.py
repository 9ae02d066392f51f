"""The file sink: one ``<topic>.jsonl`` file per topic under ``debezium.sink.file.dir``."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import BinaryIO, ClassVar

from cdc_core.config import Config, ConfigField, Fields
from cdc_core.errors import SinkError
from cdc_core.record_block import RecordBlock
from cdc_core.sinks.lines import record_parts
from cdc_core.spi.sink import SinkRecord

DIR = ConfigField("dir", "string", required=True, doc="Directory of the per-topic .jsonl files.")
FSYNC = ConfigField("fsync", "boolean", True, doc="fsync each file after every batch before acknowledging it.")

log = logging.getLogger("cdc.sinks.file")


def _cut_torn_line(path: Path) -> None:
    """Cut a last line that has no newline: a crash (``kill -9``) tore it mid-write, before its batch
    was acknowledged, so its records come again after the restart."""
    try:
        f = open(path, "r+b")
    except FileNotFoundError:
        return
    with f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return
        end, cut = size, 0
        while end > 0:
            start = max(0, end - 65536)
            f.seek(start)
            newline = f.read(end - start).rfind(b"\n")
            if newline >= 0:
                cut = start + newline + 1
                break
            end = start
        f.truncate(cut)
    log.warning("file sink: cut a torn last line from %s (%d bytes): an unacknowledged record that comes again",
                path, size - cut)


#: Buffers per ``writev`` call (Linux allows 1024; POSIX at least 16); 0 where there is no writev (Windows).
_IOV_MAX = (min(os.sysconf("SC_IOV_MAX"), 1024) if os.sysconf("SC_IOV_MAX") > 0 else 16) if hasattr(os, "writev") else 0


def _write_all(fd: int, parts: list[bytes]) -> None:
    """Write ``parts`` in order to ``fd``, resuming after short writes."""
    if not _IOV_MAX:  # no writev (Windows): one joined write
        data = memoryview(b"".join(parts))
        while data:
            data = data[os.write(fd, data):]
        return
    i, n = 0, len(parts)
    while i < n:
        chunk = parts[i:i + _IOV_MAX]
        written, size = os.writev(fd, chunk), sum(map(len, chunk))
        if written == size:
            i += len(chunk)
            continue
        # A short write: finish this chunk's remainder with plain writes, then go on.
        rest = memoryview(b"".join(chunk))[written:]
        while rest:
            rest = rest[os.write(fd, rest):]
        i += len(chunk)


class FileSink:
    """Appends each record as a JSON line to ``<dir>/<topic>.jsonl``; a batch is acknowledged once fsynced."""

    name: ClassVar[str] = "file"
    fields: ClassVar[Fields] = Fields([DIR, FSYNC])
    #: Takes a snapshot worker's ``RecordBlock`` as it is: its lines are this sink's lines, copied as they are.
    takes_blocks: ClassVar[bool] = True

    def __init__(self, config: Config):
        config.validate(self.fields)
        self.dir = Path(config.get(DIR))
        self._fsync = config.get(FSYNC)
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise SinkError(f"file sink: cannot create directory {self.dir}: {e.strerror}") from e
        self._files: dict[str, BinaryIO] = {}
        #: Per topic, the same file opened without O_APPEND (sendfile refuses an appending file): for blocks.
        self._positional: dict[str, int] = {}

    def _file(self, topic: str) -> BinaryIO:
        f = self._files.get(topic)
        if f is None:
            if "/" in topic or topic in (".", ".."):
                raise SinkError(f"file sink: topic {topic!r} cannot be used as a file name")
            path = self.dir / f"{topic}.jsonl"
            _cut_torn_line(path)
            # Unbuffered: a failed write leaves nothing pending that ``close`` would try (and fail) to write again.
            f = self._files[topic] = open(path, "ab", buffering=0)
        return f

    def write(self, batch: list[SinkRecord]) -> None:
        """Append a batch, grouped per topic, then flush and fsync every file it touched.

        Each line's pieces (``record_parts``) go to the file with ``os.writev``: nothing is joined
        into a line or a batch first, so the key and value bytes are copied once, by the kernel. A
        ``RecordBlock`` (records a snapshot worker wrote as these lines into a memory file) is copied
        file to file by the kernel (``sendfile``), between the writes of the parts around it.
        """
        by_topic: dict[str, list[bytes]] = {}
        last_topic, parts, blocks = None, None, False
        for r in batch:
            topic = r.topic
            if topic is not last_topic:
                parts = by_topic.get(topic)
                if parts is None:
                    parts = by_topic[topic] = []
                last_topic = topic
            if r.__class__ is RecordBlock:
                parts.append(r)
                blocks = True
            else:
                parts += record_parts(r)
        try:
            for topic, parts in by_topic.items():
                f = self._file(topic)
                if blocks:
                    self._write_with_blocks(topic, f.fileno(), parts)
                else:
                    _write_all(f.fileno(), parts)
                if self._fsync:
                    os.fsync(f.fileno())
        except OSError as e:
            raise SinkError(f"file sink: cannot write to {self.dir}: {e.strerror}") from e

    def _write_with_blocks(self, topic: str, fd: int, parts: list) -> None:
        """``_write_all`` of parts some of which are ``RecordBlock``s: those copied file to file by the kernel."""
        run: list[bytes] = []
        for p in parts:
            if p.__class__ is RecordBlock:
                if run:
                    _write_all(fd, run)
                    run = []
                out = self._positional.get(topic)
                if out is None:
                    out = self._positional[topic] = os.open(self.dir / f"{topic}.jsonl", os.O_WRONLY | os.O_CLOEXEC)
                p.send_to(out)
            else:
                run.append(p)
        if run:
            _write_all(fd, run)

    def close(self) -> None:
        """Close every open file; a failure is logged (every acknowledged batch is already on disk)."""
        for fd in self._positional.values():
            os.close(fd)
        self._positional.clear()
        for f in self._files.values():
            try:
                f.close()
            except OSError as e:
                log.warning("file sink: closing %s in %s failed: %s", f.name, self.dir, e.strerror)
        self._files.clear()
