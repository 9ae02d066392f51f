"""Many serialized records of one topic as one object: their JSON lines in shared memory, made by a snapshot worker.

A snapshot worker process (``cdc_core.snapshot.processes``) writes a chunk's records as the lines
line sinks write (``cdc_core.sinks.lines``: ``{"topic":..,"key":..,"value":..,"headers":{}}``) into an
anonymous memory file (``memfd``) and hands its descriptor to the main process. A ``RecordBlock`` is
that file with its line ends: the engine queues it as one item that counts as its records
(``max.batch.size``, ``max.queue.size`` and acknowledgements count records; the queue splits a block
where a batch ends), the file sink copies its bytes file to file in the kernel (``sendfile``: no
Python work per record, no mapping of the memory into this process), and any other sink gets
``SinkRecord``s back (``records()``). The memory file is closed when the last block using it is gone
(reference counting).
"""

from __future__ import annotations

import errno
import os
from array import array
from collections.abc import Sequence
from itertools import accumulate, chain, repeat
from operator import add, itemgetter
from typing import Any

from cdc_core.sinks.lines import _NO_HEADERS_END, _VALUE, _topic_prefix
from cdc_core.spi.sink import SinkRecord

_keys, _values = itemgetter(1), itemgetter(2)
_NULL = b"null"
#: Buffers per ``writev`` call (Linux allows 1024).
_IOV_MAX = min(os.sysconf("SC_IOV_MAX"), 1024) if hasattr(os, "writev") and os.sysconf("SC_IOV_MAX") > 0 else 16


def can_write() -> bool:
    """Whether blocks can be made here (``memfd_create`` and ``writev``: Linux)."""
    return hasattr(os, "memfd_create") and hasattr(os, "writev")


def write_lines(records: Sequence[SinkRecord]) -> tuple[Any, int] | None:
    """In a worker: ``records`` (one topic, no headers, no null value) as lines in a new memory file.

    Returns ``(BlockLayout, fd)`` (the caller sends the descriptor on and closes it), or None when
    the records do not fit a block (several topics, headers, a null value: they go as records).
    """
    if not records:
        return None
    topic = records[0].topic
    for r in records:
        if r.topic != topic or r.headers or r.value is None:
            return None
    keys = list(map(_keys, records))
    values = list(map(_values, records))
    key_lens = array("q", map(len, keys)) if None not in keys else None
    if key_lens is None:  # keyless tables: the line says null, the layout remembers it was no key
        key_lens = array("q", [-1 if k is None else len(k) for k in keys])
        keys = [_NULL if k is None else k for k in keys]
    prefix = _topic_prefix(topic)
    fixed = len(prefix) + len(_VALUE) + len(_NO_HEADERS_END)
    ends = array("q", [0])
    ends.extend(accumulate(map(add, map(add, map(len, keys), map(len, values)), repeat(fixed))))
    parts = list(chain.from_iterable(zip(repeat(prefix), keys, repeat(_VALUE), values, repeat(_NO_HEADERS_END))))
    return BlockLayout(topic, ends, key_lens), _memory_file(parts, ends[-1])


def write_changes(serializer: Any, records: list) -> tuple[BlockLayout, int] | None:
    """``write_lines(serializer.serialize(records))`` in one pass where the serializer can (``line_parts``:
    JsonConverter with schemas), without SinkRecords or joined keys and values in between; else None."""
    line_parts = getattr(serializer, "line_parts", None)
    if line_parts is None or not records:
        return None
    topic = records[0].topic
    made = line_parts(records, _topic_prefix(topic), _VALUE, _NO_HEADERS_END)
    if made is None:
        return None
    parts, key_lens, ends = made
    return BlockLayout(topic, ends, key_lens), _memory_file(parts, ends[-1])


def _memory_file(parts: list[bytes], size: int) -> int:
    """A new memory file holding ``parts`` (``size`` bytes in all); its descriptor (closed again on failure)."""
    fd = os.memfd_create("cdc-snapshot-chunk", os.MFD_CLOEXEC)
    try:
        _write_all(fd, parts, size)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _write_all(fd: int, parts: list[bytes], size: int) -> None:
    """All of ``parts`` to ``fd`` in order (``writev`` per ``_IOV_MAX`` parts, short writes resumed)."""
    for i in range(0, len(parts), _IOV_MAX):
        chunk = parts[i:i + _IOV_MAX]
        written = os.writev(fd, chunk)
        if written != sum(map(len, chunk)):
            rest = memoryview(b"".join(chunk))[written:]
            while rest:
                rest = rest[os.write(fd, rest):]
    if os.fstat(fd).st_size != size:
        raise OSError(f"snapshot chunk: {os.fstat(fd).st_size} bytes written to its memory file, {size} expected")


class BlockLayout:
    """What a block's memory file holds: its topic, its line ends and its records' key lengths (-1: no key)."""

    __slots__ = ("topic", "ends", "key_lens")

    def __init__(self, topic: str, ends: array, key_lens: array):
        self.topic = topic
        self.ends = ends
        self.key_lens = key_lens

    def __reduce__(self) -> Any:  # arrays pickle as their raw bytes
        return BlockLayout, (self.topic, self.ends, self.key_lens)

    def open(self, fd: int) -> RecordBlock:
        """In the main process: the block of this layout over memory file ``fd`` (closed with the last block)."""
        return RecordBlock(self.topic, _MemoryFile(fd), self.ends, self.key_lens, 0, len(self.ends) - 1)


class _MemoryFile:
    """A memory file's descriptor, closed when the last block that reads it is gone."""

    __slots__ = ("fd",)

    def __init__(self, fd: int):
        self.fd = fd

    def __del__(self) -> None:
        os.close(self.fd)


#: sendfile's refusals that mean "not between these two files" (then the bytes go through this process).
_NO_SENDFILE = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EXDEV})


class RecordBlock:
    """Records ``start`` to ``stop`` of a worker's memory file of JSON lines, one topic, no headers."""

    __slots__ = ("topic", "_file", "_ends", "_key_lens", "start", "stop")

    #: Blocks carry no offset (the raw changes around them do), as records of worker processes.
    offset = None
    #: Nor a partition of their own.
    partition = None

    def __init__(self, topic: str, file: _MemoryFile, ends: array, key_lens: array, start: int, stop: int):
        self.topic = topic
        self._file = file
        self._ends = ends
        self._key_lens = key_lens
        self.start = start
        self.stop = stop

    def __len__(self) -> int:
        return self.stop - self.start

    def __repr__(self) -> str:
        return f"RecordBlock({self.topic!r}, records {self.start}..{self.stop}, {self.nbytes} bytes)"

    @property
    def nbytes(self) -> int:
        """The bytes of this block's lines."""
        return self._ends[self.stop] - self._ends[self.start]

    def lines(self) -> bytes:
        """This block's records as the lines a line sink writes, newline-terminated (copied out)."""
        begin, size = self._ends[self.start], self.nbytes
        data = os.pread(self._file.fd, size, begin)
        while len(data) < size:  # a short read: the rest
            data += os.pread(self._file.fd, size - len(data), begin + len(data))
        return data

    def send_to(self, out: int) -> None:
        """Append this block's lines to the file open (without O_APPEND) as ``out``: copied by the kernel."""
        begin, end = self._ends[self.start], self._ends[self.stop]
        os.lseek(out, 0, os.SEEK_END)
        at = begin
        while at < end:
            try:
                sent = os.sendfile(out, self._file.fd, at, end - at)
            except OSError as e:
                if at != begin or e.errno not in _NO_SENDFILE:
                    raise
                data = memoryview(self.lines())
                while data:
                    data = data[os.write(out, data):]
                return
            if sent == 0:
                raise OSError(errno.EIO, f"snapshot chunk: its memory file ended {end - at} bytes early")
            at += sent

    def split(self, count: int) -> tuple[RecordBlock, RecordBlock]:
        """The first ``count`` records and the rest (0 < count < len), sharing the memory."""
        cut = self.start + count
        return (RecordBlock(self.topic, self._file, self._ends, self._key_lens, self.start, cut),
                RecordBlock(self.topic, self._file, self._ends, self._key_lens, cut, self.stop))

    def records(self) -> list[SinkRecord]:
        """The records as ``SinkRecord``s (for sinks that do not write lines): keys and values copied out."""
        ends, key_lens, base = self._ends, self._key_lens, self._ends[self.start]
        view = memoryview(self.lines())
        head = len(_topic_prefix(self.topic))
        between, tail = len(_VALUE), len(_NO_HEADERS_END)
        out = []
        for i in range(self.start, self.stop):
            begin, end, key_len = ends[i] - base, ends[i + 1] - base, key_lens[i]
            key_start = begin + head
            if key_len < 0:
                key, value_start = None, key_start + len(_NULL) + between
            else:
                key, value_start = bytes(view[key_start:key_start + key_len]), key_start + key_len + between
            out.append(SinkRecord(self.topic, key, bytes(view[value_start:end - tail]), {}))
        return out


def expand(items: list) -> list:
    """``items`` with every block replaced by its ``SinkRecord``s (for a sink that does not take blocks)."""
    out: list = []
    for r in items:
        if r.__class__ is RecordBlock:
            out += r.records()
        else:
            out.append(r)
    return out


def count(items: list) -> int:
    """How many records ``items`` stand for (a block counts as its records)."""
    return sum(len(r) if r.__class__ is RecordBlock else 1 for r in items)
