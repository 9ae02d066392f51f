"""Test helpers: run the YugabyteDB connector in-process on a server and collect its records as JSON."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import orjson

from cdc_core.engine import Engine
from cdc_core.events import ChangeRecord
from cdc_core.serializers.json import JsonSerializer
from cdc_core.stores.memory_offsets import MemoryOffsetStore


def yb_config(host: str, port: int, user: str, db: str, **extra: Any) -> dict[str, Any]:
    """A YugabyteDB connector configuration for ``db`` (fast polling for tests)."""
    return {"connector.class": "io.debezium.connector.postgresql.YugabyteDBConnector", "database.hostname": host,
            "database.port": port, "database.user": user, "database.dbname": db, "topic.prefix": "dbserver",
            "poll.interval.ms": 50, "status.update.interval.ms": 200, **extra}


def as_json(records: list[ChangeRecord]) -> list[dict[str, Any]]:
    """Each record's key and value as JsonConverter writes them (schemas on), with its topic."""
    out = []
    for r in JsonSerializer().serialize(records):
        out.append({"topic": r.topic, "key": orjson.loads(r.key) if r.key else None,
                    "value": orjson.loads(r.value) if r.value else None})
    return out


class Running:
    """An Engine on a thread, collecting acknowledged records, with an offset store that outlives it."""

    def __init__(self, config: dict[str, Any], store: MemoryOffsetStore | None = None):
        self.store = store or MemoryOffsetStore()
        self.engine = Engine(config, offset_store=self.store)
        self.records: list[ChangeRecord] = []
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        """The engine's run; its error kept for the test."""
        try:
            self.engine.run(self.records.extend)
        except BaseException as e:  # noqa: BLE001  # the test reads it
            self.error = e

    def wait(self, ok: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
        """Wait until ``ok()``; fail naming ``what`` (and the engine's error, if it stopped)."""
        deadline = time.monotonic() + timeout
        while not ok():
            if self.error is not None or not self._thread.is_alive():
                raise AssertionError(f"the engine stopped before {what}: {self.error!r}")
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            time.sleep(0.05)

    def wait_streaming(self) -> None:
        """Until the connector streams from its slot."""
        self.wait(lambda: self.engine.metrics.streaming.connected, "streaming to start")

    def data(self, topic: str) -> list[dict[str, Any]]:
        """The records of ``topic`` so far, as JSON (tombstones included)."""
        return as_json([r for r in list(self.records) if r.topic == topic])

    def wait_data(self, topic: str, n: int, timeout: float = 30.0) -> list[dict[str, Any]]:
        """The first ``n`` records of ``topic``, waiting for them."""
        self.wait(lambda: sum(r.topic == topic for r in list(self.records)) >= n, f"{n} records on {topic}", timeout)
        return self.data(topic)[:n]

    def stop(self) -> None:
        """Stop the engine and wait for it."""
        self.engine.stop()
        self._thread.join(30)
