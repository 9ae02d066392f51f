"""What the Spark tests of the change-table stand-ins share (SQL Server's, Db2's): chunked read, AvailableNow."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson


def standin_options(standin: Any, prefix: str, connector: str, driver: str, table: str,
                    chunk_rows: int) -> dict[str, str]:
    """Spark options for one table of a stand-in: its properties, with the driver that routes Spark's Python
    workers to it and snapshot chunks of ``chunk_rows``."""
    props = {k: str(v) for k, v in standin.properties(prefix=prefix).items()}
    props.pop("connector.class", None)
    return {**props, "connector": connector, "driver.Driver": driver, "poll.interval.ms": "100", "table": table,
            "snapshotChunkRows": str(chunk_rows)}


def chunked_read(spark: Any, props: dict[str, str], key: str) -> tuple[int, list[Any], list[str]]:
    """The ``cdc`` batch read of ``props``'s table: its number of partitions, the rows' ``key`` values sorted and
    their ``source.snapshot`` markers."""
    df = spark.read.format("cdc").options(**props).load()
    rows = [orjson.loads(r.value)["payload"] for r in df.select("value").collect()]
    return df.rdd.getNumPartitions(), sorted(p["after"][key] for p in rows), [p["source"]["snapshot"] for p in rows]


class KeyedState:
    """A ``foreachBatch`` function keeping the final state of a table, ``key -> value``, from its change events."""

    def __init__(self, key: str, value: str):
        self.key, self.value = key, value
        self.rows: dict[Any, Any] = {}

    def __call__(self, batch: Any, _batch_id: int) -> None:
        for r in batch.select("value").collect():
            if r.value is None:
                continue
            p = orjson.loads(r.value)["payload"]
            if p["op"] == "d":
                self.rows.pop(p["before"][self.key], None)
            else:
                self.rows[p["after"][self.key]] = p["after"][self.value]


def available_now(spark: Any, props: dict[str, str], apply: Any, checkpoint: Path,
                  write: Callable[[int], None] | None = None, writes: int = 0,
                  during: Callable[[Any], None] | None = None) -> None:
    """One Trigger.AvailableNow run of ``props``'s table into ``apply``; ``write(n)`` for n < ``writes`` while it
    runs (every 50 ms), ``during(query)`` once it started; fails unless the query stops by itself without an error."""
    query = (spark.readStream.format("cdc").options(**props).load().writeStream.foreachBatch(apply)
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    if during is not None:
        during(query)
    n = 0
    while write is not None and query.isActive and n < writes:
        write(n)
        n += 1
        time.sleep(0.05)
    assert query.awaitTermination(120), "Trigger.AvailableNow did not stop"
    assert query.exception() is None


def caught_up(spark: Any, standin: Any, props: dict[str, str], apply: KeyedState, checkpoint: Path) -> dict[Any, Any]:
    """Once every change is captured, a second AvailableNow run from ``checkpoint``: the state ``apply`` ends with."""
    standin.wait_captured()
    available_now(spark, props, apply, checkpoint)
    return apply.rows


class ChangeLog:
    """A ``foreachBatch`` function recording every event as ``(key, op, value)`` in the order the stream gave them."""

    def __init__(self, key: str, value: str):
        self.key, self.value = key, value
        self.events: list[tuple[Any, str, Any]] = []

    def __call__(self, batch: Any, _batch_id: int) -> None:
        rows = sorted(((r.position, r.value) for r in batch.select("position", "value").collect()), key=lambda r: r[0])
        for _, value in rows:
            if value is None:
                continue  # a tombstone
            p = orjson.loads(value)["payload"]
            image = p["before"] if p["op"] == "d" else p["after"]
            self.events.append((image[self.key], p["op"], image[self.value]))


def assert_each_version_once(events: list[tuple[Any, str, Any]], table: dict[Any, Any]) -> None:
    """Every row's versions (its value counts up by one per change, new rows start at 0) came exactly once.

    Per key: a snapshot read or a create, then one event per later version with no version twice and
    none skipped, then at most one delete; a key still in the table ends at its current version.
    """
    per_key: dict[Any, list[tuple[str, Any]]] = {}
    for key, op, value in events:
        per_key.setdefault(key, []).append((op, value))
    assert set(table) <= set(per_key), f"rows never seen: {sorted(set(table) - set(per_key))[:10]}"
    for key, seen in per_key.items():
        assert seen[0][0] in ("r", "c"), f"{key}: first event {seen[0]}"
        assert seen[0][0] == "r" or seen[0][1] == 0, f"{key}: created at version {seen[0][1]}"
        versions = [v for op, v in seen if op != "d"]
        assert versions == list(range(versions[0], versions[0] + len(versions))), f"{key}: versions {seen}"
        deletes = [i for i, (op, _) in enumerate(seen) if op == "d"]
        assert deletes in ([], [len(seen) - 1]), f"{key}: {seen}"
        if deletes:
            assert key not in table, f"{key}: deleted in the stream but still in the table"
        else:
            assert table.get(key) == versions[-1], f"{key}: ends at {versions[-1]}, the table has {table.get(key)}"


class Writer:
    """A thread changing a table while Spark reads it: updates counting a row's value up, inserts at 0, deletes.

    ``sql`` gives the statements for ``("update", key)``, ``("insert", key)``, ``("delete", key)``; each step is
    one transaction on its own connection (some touch two rows), a few ms apart, until ``stop``.
    """

    def __init__(self, conninfo: str, sql: Callable[[str, Any], str], keys: list[Any],
                 new_key: Callable[[int], Any], seed: int = 7):
        import random
        import threading

        self.conninfo, self.sql, self.live, self.new_key = conninfo, sql, list(keys), new_key
        self.random = random.Random(seed)
        self.steps = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="table-writer", daemon=True)

    def start(self) -> "Writer":
        self._thread.start()
        return self

    def stop(self) -> int:
        """Stop writing; the number of transactions committed."""
        self._stop.set()
        self._thread.join(60)
        assert self.error is None, f"the writer failed: {self.error!r}"
        return self.steps

    def _step(self) -> list[str]:
        n, pick = self.steps, self.random
        if n % 10 == 3:
            key = self.new_key(n)
            self.live.append(key)
            return [self.sql("insert", key)]
        if n % 10 == 7 and len(self.live) > 10:
            key = self.live.pop(pick.randrange(len(self.live)))
            return [self.sql("delete", key)]
        keys = {self.live[pick.randrange(len(self.live))] for _ in range(1 + n % 2)}
        return [self.sql("update", k) for k in keys]

    def _run(self) -> None:
        import psycopg

        try:
            with psycopg.connect(self.conninfo, autocommit=True) as conn:
                while not self._stop.is_set():
                    with conn.transaction():
                        for statement in self._step():
                            conn.execute(statement)
                    self.steps += 1
                    time.sleep(0.01)
        except BaseException as e:  # reported by stop()
            self.error = e


def write_through_snapshot(writer: Writer, log: ChangeLog, rows: int, timeout: float = 90.0) -> Callable[[Any], None]:
    """A ``during`` for ``available_now``: the writer keeps writing until the snapshot's ``rows`` reached ``log`` and
    the stream ran a second more, then stops (a connector without a LogPosition stops once no change comes)."""
    def during(query: Any) -> None:
        deadline = time.monotonic() + timeout
        while len(log.events) < rows and query.isActive and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)
        writer.stop()
    return during
