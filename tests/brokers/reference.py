"""What the file sink writes for the same data: the reference a broker sink's key and value bytes are compared with."""

from __future__ import annotations

import re
from pathlib import Path

#: Parts of an event that differ from one run to the next (times, and the snapshot's log position and transaction).
_VOLATILE = re.compile(rb'"(ts_ms|ts_us|ts_ns|lsn|txId|sequence|xmin)":("(?:[^"\\]|\\.)*"|[0-9]+|null)')


def file_sink_records(events_dir: Path, topic: str) -> list[tuple[bytes | None, bytes | None, bytes]]:
    """``(key, value, headers)`` bytes exactly as embedded in each line of the file sink's ``<topic>.jsonl``."""
    out = []
    for line in (events_dir / f"{topic}.jsonl").read_bytes().split(b"\n"):
        if not line:
            continue
        key_at = line.index(b',"key":') + len(b',"key":')
        value_at = line.index(b',"value":', key_at)
        headers_at = line.rindex(b',"headers":')
        key, value = line[key_at:value_at], line[value_at + len(b',"value":'):headers_at]
        out.append((None if key == b"null" else key, None if value == b"null" else value,
                    line[headers_at + len(b',"headers":'):-1]))
    return out


def stable(value: bytes) -> bytes:
    """``value`` with the parts that differ between two runs over the same data blanked, byte for byte otherwise."""
    return _VOLATILE.sub(rb'"\1":0', value)
