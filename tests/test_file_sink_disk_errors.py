"""The file sink on a full or read-only disk: one clear line naming the directory, offsets untouched, nothing lost."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cdc_process import CdcProcess, server_properties, write_properties

TOPIC = "dbserver1.public.disk"


def _fill(directory: Path) -> None:
    """Fill the file system of ``directory`` to the last byte."""
    with open(directory / "filler", "wb", buffering=0) as f:
        for chunk in (65536, 4096, 512, 64, 1):
            try:
                while True:
                    f.write(b"\0" * chunk)
            except OSError:
                pass


@pytest.mark.parametrize("failure", ["full", "read-only"])
def test_unwritable_sink_stops_clearly_and_loses_nothing(pg_server, pg_db, small_disk, tmp_path, failure):
    pg_server.execute("CREATE TABLE disk (id int PRIMARY KEY, body text)", dbname=pg_db)
    pg_server.execute("INSERT INTO disk VALUES (1, 'first')", dbname=pg_db)
    props = server_properties(pg_server, pg_db, tmp_path, **{"slot.name": "disk_slot", "table.include.list": "public.disk"})
    config = write_properties(tmp_path / "app.properties", props)
    cdc = CdcProcess(config, tmp_path).start()
    cdc.wait_events(TOPIC, 1)
    # The offsets are written just after the sink acknowledged the batch: the event can be read before them.
    cdc.wait_until(lambda: (tmp_path / "offsets.json").exists(), 30, "the first offsets")
    if failure == "read-only":  # a file system cannot become read-only while files are open on it for writing
        assert cdc.terminate() == 0, cdc.log()
        subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
        cdc = CdcProcess(config, tmp_path).start()
    else:  # the disk fills while cdc runs
        _fill(small_disk)
    offsets = (tmp_path / "offsets.json").read_text()
    # One event smaller than the file's write buffer but larger than the room left on the disk.
    pg_server.execute("INSERT INTO disk VALUES (2, repeat('x', 3000))", dbname=pg_db)
    assert cdc.wait_exit(60) == 1, cdc.log()
    log = cdc.log()
    assert "Traceback" not in log, log
    reason = "No space left on device" if failure == "full" else "Read-only file system"
    assert f"file sink: cannot write to {small_disk}: {reason}" in log, log
    assert (tmp_path / "offsets.json").read_text() == offsets, "offsets moved past what the sink acknowledged"

    if failure == "full":
        (small_disk / "filler").unlink()
    else:
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
    pg_server.execute("INSERT INTO disk SELECT g, repeat('x', 100) FROM generate_series(3, 50) g", dbname=pg_db)
    cdc = CdcProcess(config, tmp_path).start()
    cdc.wait_events(TOPIC, 50, timeout=60)
    assert cdc.terminate() == 0, cdc.log()
    ids = [e["key"]["payload"]["id"] for e in cdc.events(TOPIC)]
    assert sorted(set(ids)) == list(range(1, 51)), "a change was lost"


def test_file_sink_close_after_a_failed_write_does_not_raise(small_disk):
    """The sink's own contract: a batch that could not be written is not retried (nor raised) by ``close``."""
    from cdc_core.config import Config
    from cdc_core.errors import SinkError
    from cdc_core.sinks.file import FileSink
    from cdc_core.spi.sink import SinkRecord

    sink = FileSink(Config({"dir": str(small_disk / "ev")}))
    sink.write([SinkRecord("t", b"1", b'"' + b"y" * 1400 + b'"', {})])
    _fill(small_disk)
    with pytest.raises(SinkError, match="No space left on device"):
        sink.write([SinkRecord("t", b"2", b'"' + b"y" * 4400 + b'"', {})])
    sink.close()
