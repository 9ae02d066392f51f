"""Kit scenario 6, for every connector: the sink failing -- slow, refusing, unwritable.

Under a constant writer: an HTTP sink that holds each request for seconds, then answers 500 and
429 for a while. ``cdc run`` waits and retries; the engine applies back-pressure (the process's
memory stays bounded however much the writer writes); the committed offsets never move past what
the sink acknowledged (each committed offset read during the failure lies before the first event
not yet acknowledged); and at the end the delivered events replay to exactly the table. Then the
file sink's directory (a small tmpfs) filling up mid-stream: one clear line naming the directory,
exit 1, offsets not past what was written; a restart after making room loses nothing.
``CDC_SOAK=1`` holds each failure longer.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from brokers.http import RecordingHttpServer
from cdc_process import CdcProcess
from kit import ITEMS, SOAK, ConnectorFixture, Workdir, Writer, payload, start_cdc, wait_replayed

STALL_S = 45 if SOAK else 5  # how long the sink holds requests
FAIL_S = 40 if SOAK else 3  # how long it answers 500 (and 429)
HOLD_S = 1.0  # each request held this long while stalled
LARGE = 1_000_000  # the writer's large values (5% of writes): without back-pressure memory would grow by megabytes a second
QUEUE_BYTES = 2 << 20
RSS_GROWTH_MB = 12  # the queue (2 MiB of serialized records, more as objects) and one batch; unbounded: +31 MiB in 6 s


def _rss_mb(pid: int) -> float:
    """The resident memory of process ``pid`` in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


def _offset(work: Workdir) -> dict[str, Any]:
    """The one committed offset in the offsets file."""
    return orjson.loads(work.offsets.read_bytes())["offsets"][0]["offset"]


def _http_events(http: RecordingHttpServer) -> list[dict[str, Any] | None]:
    """What the HTTP sink delivered (2xx) in order, as file sink lines (``key`` rebuilt from the row).

    The HTTP sink posts every topic to the one URL: heartbeats and schema changes come as None.
    """
    out: list[dict[str, Any] | None] = []
    for request in http.received:
        value = orjson.loads(request.body)
        if "op" not in payload(value) or payload(value)["source"].get("table") != ITEMS.name:
            out.append(None)
            continue
        row = payload(value)["after"] or payload(value)["before"]
        out.append({"key": {k: row[k] for k in ITEMS.key}, "value": value})
    return out


class OffsetWatch:
    """Committed offsets read while the sink fails, each with how many events were acknowledged by then."""

    def __init__(self, fx: ConnectorFixture, work: Workdir, http: RecordingHttpServer):
        self.fx, self.work, self.http = fx, work, http
        self.readings: list[tuple[dict[str, Any], int]] = []

    def read(self) -> tuple[dict[str, Any], int]:
        """Read the offsets file, then count the acknowledged events (never fewer than the offset covers)."""
        offset = _offset(self.work)
        reading = (offset, len(self.http.received))
        self.readings.append(reading)
        return reading

    def check(self, delivered: list[dict[str, Any] | None]) -> list[str]:
        """Each reading's offset lies before the first event that was not acknowledged when it was read."""
        bad = []
        for offset, acked in self.readings:
            unacked = [e for e in delivered[acked:] if e is not None]
            if unacked:
                source = payload(unacked[0]["value"])["source"]
                if not self.fx.resumes_before(offset, source):
                    bad.append(f"offset {offset} committed past event #{acked} ({source}), not acknowledged then")
        return bad


def test_slow_and_failing_sink_back_pressure_and_offsets(connector, tmp_path):
    """A stalled, then 500/429-answering HTTP sink: cdc waits, memory stays bounded, offsets follow the acks, no loss."""
    connector.create_table(ITEMS)
    writer = Writer(connector, seed=61, large=LARGE)
    writer.seed_rows(200)
    work = Workdir(tmp_path)
    with RecordingHttpServer() as http:
        sink = {"debezium.sink.type": "http", "debezium.sink.http.url": http.url,
                "debezium.sink.http.retries": 1_000_000, "debezium.sink.http.retry.interval.ms": 200,
                "debezium.sink.http.timeout.ms": 30_000}
        cdc = start_cdc(connector, work, sink, **{"max.batch.size": 8, "max.queue.size": 64,
                                                  "max.queue.size.in.bytes": QUEUE_BYTES})
        watch = OffsetWatch(connector, work, http)
        events = lambda: [e for e in _http_events(http) if e is not None]  # noqa: E731
        try:
            wait_replayed(cdc, connector, ITEMS, 60, events)  # the snapshot delivered, offsets committed
            cdc.wait_until(lambda: work.offsets.exists(), 30, "the first offsets")
            writer.start(pause=0.01)
            cdc.wait_until(lambda: writer.transactions > 10, 30, "the writer under way")

            http.stall(HOLD_S)
            time.sleep(2 * HOLD_S)  # the queue fills
            rss = [_rss_mb(cdc.proc.pid)]
            written = writer.version
            deadline = time.monotonic() + STALL_S
            while time.monotonic() < deadline:
                watch.read()
                rss.append(_rss_mb(cdc.proc.pid))
                time.sleep(1)
            written = writer.version - written
            stalled_acks = len(http.received)

            http.stall(0)
            http.answer(500)
            http.fail_next(429, 429)
            time.sleep(1)
            failing = watch.read()
            time.sleep(FAIL_S)
            assert watch.read()[0] == failing[0], "offsets moved while the sink answered only 500 and 429"
            assert len(http.received) == failing[1], "a request was acknowledged while the sink answered 500"
            assert cdc.proc.poll() is None, f"cdc gave up on a failing sink:\n{cdc.log()}"
            rss.append(_rss_mb(cdc.proc.pid))

            http.answer(200)
            time.sleep(0.5)  # the writer still writing as the sink recovers
            writer.stop()
            result = wait_replayed(cdc, connector, ITEMS, 120, events)
        finally:
            writer._stop.set()
            http.stall(0)
            http.answer(200)
            assert cdc.terminate() == 0, cdc.log()
        delivered = _http_events(http)
        log = cdc.log()
    summary = (f"{writer.transactions} writer transactions ({written} writes during the {STALL_S}s stall), "
               f"{len(delivered)} events delivered ({stalled_acks} by the stall's end), "
               f"RSS {min(rss):.0f}..{max(rss):.0f} MiB, {len(watch.readings)} offsets checked, "
               f"{result.duplicates} redelivered")
    result.report(summary)
    assert watch.check(delivered) == [], summary + "\n" + "\n".join(watch.check(delivered)[:5])
    assert "answered 500" in log and "answered 429" in log and "retrying" in log, log[-3000:]
    assert "Traceback" not in log, log
    if connector.read_ahead_unbounded:  # everything else was checked
        pytest.skip(f"the memory bound is not checked: {connector.read_ahead_unbounded} ({summary})")
    assert max(rss) - rss[0] < RSS_GROWTH_MB, f"memory grew while the sink stalled: {summary}"


def test_file_sink_directory_full_mid_stream_stops_clearly_and_resumes(connector, tmp_path, small_disk):
    """The events directory fills while a writer runs: one line naming it, exit 1; after making room nothing is lost."""
    connector.create_table(ITEMS)
    writer = Writer(connector, seed=62, large=50_000)
    writer.seed_rows(50)
    work = Workdir(tmp_path)
    topic = connector.topic(ITEMS)
    cdc = start_cdc(connector, work, **{"max.batch.size": 16})
    try:
        cdc.wait_until(lambda: work.offsets.exists(), 60, "the snapshot")
        writer.start(pause=0.005)
        code = cdc.wait_exit(120 if SOAK else 60)  # the disk fills: cdc stops by itself
    finally:
        writer.stop()
    log = cdc.log()
    assert code == 1, log
    assert "Traceback" not in log, log
    errors = [line for line in log.splitlines() if f"file sink: cannot write to {small_disk}" in line]
    assert errors and "No space left on device" in errors[0], log
    offset = _offset(work)
    written = CdcProcess(work.config, work.root).events(topic)  # what the sink wrote (a torn last line ignored)

    subprocess.run(["mount", "-o", "remount,size=256m", str(small_disk)], check=True)
    writer.run(20)
    cdc = start_cdc(connector, work, **{"max.batch.size": 16})
    try:
        result = wait_replayed(cdc, connector, ITEMS, 120)
    finally:
        assert cdc.terminate() == 0, cdc.log()
    after = cdc.events(topic)
    print(f"{writer.transactions} writer transactions; the disk held {len(written)} events; "
          f"{result.events} in all, {result.duplicates} redelivered")
    assert result.problems == [], "\n".join(result.problems[:20])
    assert after[: len(written)] == written
    assert len(after) > len(written), "nothing came after the restart"
    seen = {_ident(e) for e in written}
    first_unwritten = next(payload(e["value"])["source"] for e in after[len(written):]
                           if e["value"] is not None and _ident(e) not in seen)
    assert connector.resumes_before(offset, first_unwritten), \
        f"offset {offset} committed past {first_unwritten}, which the full disk never took"


def _ident(line: dict[str, Any]) -> tuple[Any, ...]:
    """An event's identity as ``replay`` counts redeliveries: op, key, and the row versions before and after."""
    value = payload(line["value"])
    if value is None:
        return ("tombstone", orjson.dumps(line["key"]))
    return (value["op"], orjson.dumps(line["key"]), (value["before"] or {}).get("v"), (value["after"] or {}).get("v"))
