"""The file sink after a crash mid-write: the torn last line is cut, complete lines stay."""

from __future__ import annotations

from pathlib import Path

import orjson

from cdc_core.config import Config
from cdc_core.sinks.file import FileSink
from cdc_core.spi.sink import SinkRecord


def _write(directory: Path, key: int) -> None:
    sink = FileSink(Config({"dir": str(directory), "fsync": "false"}))
    sink.write([SinkRecord("t", str(key).encode(), None, {})])
    sink.close()


def test_a_torn_last_line_is_cut_before_appending(tmp_path: Path) -> None:
    _write(tmp_path, 1)
    path = tmp_path / "t.jsonl"
    with open(path, "ab") as f:
        f.write(b'{"topic":"t","key":2,"val')  # killed mid-write: no newline
    _write(tmp_path, 2)
    assert [orjson.loads(line)["key"] for line in path.read_bytes().splitlines()] == [1, 2]


def test_a_file_holding_only_a_torn_line_starts_over(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_bytes(b"x" * 200_000)  # longer than one backwards read
    _write(tmp_path, 7)
    assert (tmp_path / "t.jsonl").read_bytes() == b'{"topic":"t","key":7,"value":null,"headers":{}}\n'


def test_complete_files_are_left_as_they_are(tmp_path: Path) -> None:
    _write(tmp_path, 1)
    _write(tmp_path, 2)
    assert (tmp_path / "t.jsonl").read_bytes().count(b"\n") == 2


def test_a_batch_of_many_records_is_written_as_record_line_writes_each(tmp_path: Path) -> None:
    """More records than one writev call takes (1024 pieces), with and without headers and nulls:
    the file holds exactly ``record_line`` of each, in order."""
    from cdc_core.sinks.lines import record_line

    batch = [SinkRecord("t" if i % 3 else "u", None if i % 7 == 0 else str(i).encode(),
                        None if i % 5 == 0 else b'{"v":"' + b"x" * (i % 50) + b'"}',
                        {"h": i} if i % 4 == 0 else {}) for i in range(1500)]
    sink = FileSink(Config({"dir": str(tmp_path), "fsync": "false"}))
    sink.write(batch)
    sink.close()
    for topic in ("t", "u"):
        expected = b"".join(record_line(r) for r in batch if r.topic == topic)
        assert (tmp_path / f"{topic}.jsonl").read_bytes() == expected
