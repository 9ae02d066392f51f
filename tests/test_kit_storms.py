"""Kit scenario 3, for every connector: kill -9 storms on ``cdc run`` under a constant writer.

``cdc run`` is killed at random moments -- the first time while its snapshot runs, then while
streaming and committing offsets (every batch commits: ``offset.flush.interval.ms=0``, small
batches) -- and restarted each time, while a writer keeps changing the table. At the end one run
catches up: replaying the events must give exactly the table, no key may go back in time, and the
redelivered events (at-least-once) are counted and bounded. The quick variant (CI) kills a few
times; ``CDC_SOAK=1`` kills 30 times over a larger table.
"""

from __future__ import annotations

import random
import time

import orjson

from kit import ITEMS, SOAK, Workdir, Writer, start_cdc, wait_replayed

KILLS = 30 if SOAK else 4
SEED_ROWS = 20_000 if SOAK else 5_000
BATCH = 64


def test_kill_9_storm_loses_nothing_and_repeats_a_bounded_number(connector, tmp_path):
    """Each kill -9 loses nothing; each repeats at most the unacknowledged batches (or the interrupted snapshot)."""
    rng = random.Random(7)
    connector.create_table(ITEMS)
    writer = Writer(connector, seed=3)
    writer.seed_rows(SEED_ROWS)
    work = Workdir(tmp_path)
    topic = connector.topic(ITEMS)
    phases: list[str] = []
    writer.start(pause=0.01)
    try:
        for i in range(KILLS):
            cdc = start_cdc(connector, work, **{"max.batch.size": BATCH, "max.queue.size": 4 * BATCH})
            before = len(cdc.events(topic))
            if i == 0:  # in the middle of the snapshot: as soon as its first batch is out
                _wait_for_growth(cdc.events_dir / f"{topic}.jsonl", cdc)
            else:  # after some progress: at a random moment, or right as a batch lands (its commit under way)
                cdc.wait_until(lambda: len(cdc.events(topic)) > before + rng.randrange(1, 4 * BATCH), 60,
                               "progress after the restart")
                if i % 2:
                    _wait_for_growth(cdc.events_dir / f"{topic}.jsonl", cdc)
                else:
                    time.sleep(rng.uniform(0, 0.5))
            phases.append("snapshot" if not _snapshot_done(work) else "streaming" if i % 2 == 0 else "commit")
            cdc.kill()
            assert "Traceback" not in cdc.log(), cdc.log()
        writer.stop()
        cdc = start_cdc(connector, work, **{"max.batch.size": BATCH, "max.queue.size": 4 * BATCH})
        try:
            result = wait_replayed(cdc, connector, ITEMS, 120)
        finally:
            assert cdc.terminate() == 0, cdc.log()
    finally:
        writer._stop.set()
    summary = (f"{KILLS} kills ({phases.count('snapshot')} during the snapshot, {phases.count('commit')} as a batch "
               f"landed), {writer.transactions} writer "
               f"transactions, {result.events} events, {result.duplicates} redelivered, {result.reread} re-read by "
               f"{result.snapshots} snapshots")
    result.report(summary)
    assert phases[0] == "snapshot", summary
    # At-least-once: a kill repeats what was sent but not yet committed -- the batches in flight, or the
    # whole transaction being replayed -- never more; an interrupted snapshot is read again, once.
    assert result.duplicates <= KILLS * (4 * BATCH + writer.max_transaction), summary
    assert result.snapshots <= 1 + phases.count("snapshot"), summary


def _wait_for_growth(path, cdc, timeout: float = 60.0) -> None:
    """Poll tightly until the sink file grows (a batch was written; its offsets are being committed)."""
    deadline = time.monotonic() + timeout
    size = path.stat().st_size if path.exists() else 0
    while not (path.exists() and path.stat().st_size > size):
        assert time.monotonic() < deadline and cdc.proc.poll() is None, f"no snapshot batch:\n{cdc.log()}"
        time.sleep(0.002)


def _snapshot_done(work: Workdir) -> bool:
    """Whether a committed offset says the snapshot is over."""
    try:
        data = orjson.loads(work.offsets.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return False
    return any(not entry["offset"].get("snapshot") or entry["offset"].get("snapshot_completed")
               for entry in data.get("offsets", []))
