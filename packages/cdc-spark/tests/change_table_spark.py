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


def available_now(spark: Any, props: dict[str, str], apply: KeyedState, checkpoint: Path,
                  write: Callable[[int], None] | None = None, writes: int = 0) -> None:
    """One Trigger.AvailableNow run of ``props``'s table into ``apply``; ``write(n)`` for n < ``writes`` while it
    runs (every 50 ms); fails unless the query stops by itself without an error."""
    query = (spark.readStream.format("cdc").options(**props).load().writeStream.foreachBatch(apply)
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
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
