"""The built-in signal channels: ``source`` (the signal table), ``file`` and ``in-process``."""

from __future__ import annotations

import fcntl
import os
import threading
import time
import uuid
from collections import deque
from pathlib import Path
from typing import Any, ClassVar

import orjson

from cdc_core.config import Config
from cdc_core.signals.config import SIGNAL_FILE, SIGNAL_POLL_INTERVAL_MS
from cdc_core.signals.spi import SignalRecord


class SourceSignalChannel:
    """Signals inserted into the signal table (``signal.data.collection``), seen in the change stream.

    The controller reads these rows itself, at their place in the stream (they share the table
    with the watermarks); this class gives the channel its name and keeps the plugin contract.
    """

    name: ClassVar[str] = "source"

    def __init__(self, config: Config, log: Any = None):
        self.config = config

    def read(self) -> list[SignalRecord]:
        """Nothing to poll: the rows arrive with the change stream."""
        return []

    def commit(self) -> None:
        """Nothing to remember: the row's position in the log is committed with the offsets."""

    def close(self) -> None:
        """Nothing to release."""


class InProcessSignalChannel:
    """Signals sent from the same process (``Engine.signal``); always read, whatever the configuration."""

    name: ClassVar[str] = "in-process"

    def __init__(self, config: Config | None = None, log: Any = None):
        self._pending: deque[SignalRecord] = deque()
        self._lock = threading.Lock()

    def send(self, type_: str, data: Any = None, id_: str | None = None) -> str:
        """Queue a signal (thread-safe); returns its id."""
        record = SignalRecord(id_ or str(uuid.uuid4()), type_, data, self.name)
        with self._lock:
            self._pending.append(record)
        return record.id

    def read(self) -> list[SignalRecord]:
        """The signals sent since the last call."""
        with self._lock:
            out = list(self._pending)
            self._pending.clear()
        return out

    def commit(self) -> None:
        """Nothing to remember."""

    def close(self) -> None:
        """Nothing to release."""


def parse_signal_line(line: bytes, channel: str) -> SignalRecord:
    """One JSON line ``{"id": ..., "type": ..., "data": {...}}``; ValueError if it is not one."""
    doc = orjson.loads(line)
    if not isinstance(doc, dict) or not isinstance(doc.get("type"), str):
        raise ValueError('a signal line is a JSON object with a string "type"')
    return SignalRecord(str(doc.get("id") or uuid.uuid4()), doc["type"], doc.get("data"), channel)


def append_signal(path: str | Path, type_: str, data: Any, id_: str | None = None) -> str:
    """Append one signal line to a signal file under an exclusive lock; returns the signal's id.

    One ``write`` of one complete line on a file opened for appending: a reader never sees half
    of it (it reads complete lines only), and concurrent writers never interleave.
    """
    signal_id = id_ or str(uuid.uuid4())
    line = orjson.dumps({"id": signal_id, "type": type_, "data": data}) + b"\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    return signal_id


class FileSignalChannel:
    """Signals appended to ``signal.file``, one JSON object a line (``cdc signal`` writes them).

    Unlike Debezium's channel, the file is never rewritten (so a writer appending at the same
    moment loses nothing): the position of the last dispatched line is kept in
    ``<signal.file>.offset`` with the file's inode, so a restart does not run a line again and a
    replaced or truncated file is read from its start.
    """

    name: ClassVar[str] = "file"

    def __init__(self, config: Config, log: Any = None):
        self.path = Path(config.get(SIGNAL_FILE))
        self.state_path = self.path.with_name(self.path.name + ".offset")
        self.interval = config.get(SIGNAL_POLL_INTERVAL_MS) / 1000.0
        self.log = log
        self._inode, self._position = self._load_state()
        self._read_to = self._position
        self._next_poll = 0.0

    def _load_state(self) -> tuple[int | None, int]:
        try:
            doc = orjson.loads(self.state_path.read_bytes())
            return doc.get("inode"), int(doc.get("offset") or 0)
        except (FileNotFoundError, ValueError, orjson.JSONDecodeError, AttributeError):
            return None, 0

    def read(self) -> list[SignalRecord]:
        """Complete lines appended since the last dispatched one (polled every ``signal.poll.interval.ms``)."""
        now = time.monotonic()
        if now < self._next_poll:
            return []
        self._next_poll = now + self.interval
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return []
        if st.st_ino != self._inode or st.st_size < self._position:
            # A new or truncated file: read it from the start.
            self._inode, self._position, self._read_to = st.st_ino, 0, 0
        if st.st_size <= self._position:
            return []
        with open(self.path, "rb") as f:
            fcntl.flock(f.fileno(), fcntl.LOCK_SH)
            f.seek(self._position)
            data = f.read(st.st_size - self._position)
        end = data.rfind(b"\n") + 1  # complete lines only
        out = []
        for line in data[:end].splitlines():
            if not line.strip():
                continue
            try:
                out.append(parse_signal_line(line, self.name))
            except ValueError as e:
                if self.log is not None:
                    self.log.warning("skipping a line of signal file %s that is not a signal: %s", self.path, e)
        self._read_to = self._position + end
        return out

    def commit(self) -> None:
        """Remember the position after the lines dispatched (written atomically)."""
        if self._read_to == self._position:
            return
        self._position = self._read_to
        tmp = self.state_path.with_name(self.state_path.name + ".tmp")
        tmp.write_bytes(orjson.dumps({"inode": self._inode, "offset": self._position}))
        os.replace(tmp, self.state_path)

    def close(self) -> None:
        """Nothing held open between polls."""
