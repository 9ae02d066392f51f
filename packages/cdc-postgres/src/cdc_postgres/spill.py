"""Spill files for streamed (in-progress) transactions: their messages kept on disk until they commit."""

from __future__ import annotations

import struct
import tempfile
from collections.abc import Iterator
from typing import BinaryIO

_HEADER = struct.Struct(">QI")  # the message's WAL position, payload length


class SpilledTransaction:
    """The pgoutput messages of one streamed transaction, appended to an anonymous temp file.

    Memory stays bounded whatever the transaction's size: only the file offset is kept. Aborted
    subtransactions are remembered and their messages skipped when the file is read back.
    """

    def __init__(self, xid: int, directory: str | None = None):
        self.xid = xid
        self.file: BinaryIO = tempfile.TemporaryFile(prefix=f"cdc-xid{xid}-", dir=directory)
        self.aborted: set[int] = set()
        self.messages = 0
        self.bytes = 0

    def append(self, lsn: int, payload: bytes | memoryview) -> None:
        """Keep one message (as received: kind byte, xid, body)."""
        self.file.write(_HEADER.pack(lsn, len(payload)))
        self.file.write(payload)
        self.messages += 1
        self.bytes += len(payload) + _HEADER.size

    def abort_subtransaction(self, subxid: int) -> None:
        """Drop the changes of an aborted subtransaction."""
        self.aborted.add(subxid)

    def replay(self, chunk: int = 65536) -> Iterator[tuple[int, bytes]]:
        """Every kept message in order, as ``(lsn, payload)``; reads the file in ``chunk``-sized pieces."""
        f = self.file
        f.flush()
        f.seek(0)
        header = _HEADER.size
        buf = b""
        while True:
            data = f.read(chunk)
            if not data:
                break
            buf = buf + data if buf else data
            pos = 0
            while len(buf) - pos >= header:
                lsn, length = _HEADER.unpack_from(buf, pos)
                end = pos + header + length
                if end > len(buf):
                    break
                yield lsn, buf[pos + header:end]
                pos = end
            buf = buf[pos:]
        if buf:
            raise ValueError(f"spill file of transaction {self.xid} is truncated ({len(buf)} bytes left over)")

    def close(self) -> None:
        """Delete the file."""
        self.file.close()
