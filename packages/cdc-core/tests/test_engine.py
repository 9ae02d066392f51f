"""The engine over the in-memory connector: delivery order, commit-after-ack, stop, retries, batches, resume."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from memory_connector import CUSTOMERS, MemoryScript, add_script, insert, memory_registry, offset, source

from cdc_core.config import Config
from cdc_core.engine import Engine
from cdc_core.errors import ConfigError, ConnectorError, RetriableError
from cdc_core.events import ChangeRecord, Checkpoint, RawChange
from cdc_core.sinks.file import FileSink
from cdc_core.stores.memory_offsets import MemoryOffsetStore

PARTITION = {"server": "test"}

pytestmark = pytest.mark.timeout(30)


def batches(*sizes: int) -> list[list[RawChange]]:
    """Connector batches of inserts with consecutive positions 1, 2, 3, ..."""
    out, pos = [], 0
    for size in sizes:
        out.append([insert(pos + i + 1) for i in range(size)])
        pos += size
    return out


def engine_for(script: MemoryScript, **props: Any) -> Engine:
    config = {
        "connector.class": "memory",
        "topic.prefix": "test",
        "memory.script": add_script(script),
        "poll.interval.ms": "10",
        "errors.retry.delay.initial.ms": "1",
        **props,
    }
    kwargs = {} if "offset.storage.file.filename" in props else {"offset_store": MemoryOffsetStore()}
    return Engine(config, plugins=memory_registry(), **kwargs)


class Collector:
    """A handler that keeps every batch it is given; optionally fails on one call."""

    def __init__(self, fail_on_call: int | None = None):
        self.batches: list[list[ChangeRecord]] = []
        self.fail_on_call = fail_on_call

    def __call__(self, records: list[ChangeRecord]) -> None:
        if self.fail_on_call is not None and len(self.batches) + 1 == self.fail_on_call:
            raise RuntimeError("the sink is down")
        self.batches.append(list(records))

    @property
    def positions(self) -> list[int]:
        return [r.value["source"]["pos"] for b in self.batches for r in b if r.value is not None]


def committed(engine: Engine) -> dict | None:
    return engine.offset_store.get(PARTITION)


def test_every_record_is_delivered_in_order_and_the_last_offset_committed() -> None:
    script = MemoryScript(batches(3, 1, 4))
    engine = engine_for(script)
    handler = Collector()
    engine.run(handler)
    assert handler.positions == list(range(1, 9))
    assert all(r.topic == "test.public.customers" for b in handler.batches for r in b)
    assert committed(engine) == {"pos": 8}
    assert script.starts == [None]
    assert script.closes == 1


def test_connector_is_told_about_acknowledged_offsets_while_streaming() -> None:
    script = MemoryScript(batches(2, 2), keep_streaming=True)
    engine = engine_for(script)
    handler = Collector()
    thread = threading.Thread(target=engine.run, args=(handler,), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while {"pos": 4} not in script.acknowledged and time.monotonic() < deadline:
        time.sleep(0.005)
    engine.stop()
    thread.join(10)
    assert not thread.is_alive()
    assert script.acknowledged[-1] == {"pos": 4}
    assert script.acknowledged == sorted(script.acknowledged, key=lambda o: o["pos"])


def test_a_failing_handler_commits_nothing_of_its_batch_and_run_raises() -> None:
    script = MemoryScript(batches(2, 2, 2), keep_streaming=True)
    engine = engine_for(script, **{"max.batch.size": "2"})
    handler = Collector(fail_on_call=2)
    with pytest.raises(RuntimeError, match="the sink is down"):
        engine.run(handler)
    assert handler.positions == [1, 2]
    assert committed(engine) == {"pos": 2}
    assert script.stops >= 1 and script.closes == 1


def test_a_failing_first_batch_commits_nothing() -> None:
    engine = engine_for(MemoryScript(batches(2)))
    with pytest.raises(RuntimeError):
        engine.run(Collector(fail_on_call=1))
    assert committed(engine) is None


def test_stop_from_another_thread_drains_the_queue_and_returns() -> None:
    script = MemoryScript(batches(1, 3, 3, 3), keep_streaming=True)
    engine = engine_for(script, **{"max.batch.size": "1"})
    in_handler, release = threading.Event(), threading.Event()
    handler = Collector()

    def slow(records: list[ChangeRecord]) -> None:
        in_handler.set()
        assert release.wait(10)
        handler(records)

    thread = threading.Thread(target=engine.run, args=(slow,), daemon=True)
    thread.start()
    assert in_handler.wait(10)
    deadline = time.monotonic() + 10
    while len(engine.queue) < 9 and time.monotonic() < deadline:  # everything after the first record is queued
        time.sleep(0.005)
    stopper = threading.Thread(target=engine.stop)
    stopper.start()
    stopper.join(10)
    release.set()
    thread.join(10)
    assert not thread.is_alive(), "run() must return after stop()"
    assert handler.positions == list(range(1, 11))
    assert committed(engine) == {"pos": 10}
    assert script.stops >= 1 and script.closes == 1


def test_stop_while_the_connector_is_being_set_up_is_not_lost() -> None:
    gate = threading.Event()
    script = MemoryScript(batches(1), keep_streaming=True, partition_gate=gate)
    engine = engine_for(script)
    thread = threading.Thread(target=engine.run, args=(Collector(),), daemon=True)
    thread.start()
    try:
        assert script.in_partition.wait(10)
        engine.stop()
        gate.set()
        thread.join(3)
        assert not thread.is_alive(), "run() did not return after stop()"
    finally:
        for connector in script.connectors:  # let a stuck engine thread end
            connector.stop()
        thread.join(10)


def test_stop_before_run_returns_at_once() -> None:
    script = MemoryScript(batches(2), keep_streaming=True)
    engine = engine_for(script)
    engine.stop()
    handler = Collector()
    engine.run(handler)
    assert handler.batches == [] and committed(engine) is None


def test_a_retriable_error_is_retried_from_the_acknowledged_offset() -> None:
    script = MemoryScript(batches(2, 2, 2), fail_at=1, failures=1)
    engine = engine_for(script, **{"errors.max.retries": "3"})
    handler = Collector()
    engine.run(handler)
    assert handler.positions == [1, 2, 3, 4, 5, 6]  # nothing lost, nothing repeated
    assert script.starts == [None, {"pos": 2}]
    assert script.closes == 2
    assert committed(engine) == {"pos": 6}


def test_retries_forever_by_default() -> None:
    script = MemoryScript(batches(1, 1), fail_at=1, failures=5)
    engine = engine_for(script)
    handler = Collector()
    engine.run(handler)
    assert handler.positions == [1, 2]
    assert len(script.starts) == 6


@pytest.mark.parametrize(("max_retries", "attempts"), [(0, 1), (2, 3)])
def test_retries_give_up_after_errors_max_retries(max_retries: int, attempts: int) -> None:
    script = MemoryScript(batches(1, 1), fail_at=1, failures=100)
    engine = engine_for(script, **{"errors.max.retries": str(max_retries)})
    handler = Collector()
    with pytest.raises(RetriableError, match="simulated outage"):
        engine.run(handler)
    assert handler.positions == [1]  # what came before the failure is delivered and committed
    assert committed(engine) == {"pos": 1}
    assert len(script.starts) == attempts
    assert script.closes == attempts


def test_a_non_retriable_error_is_not_retried() -> None:
    script = MemoryScript(batches(1, 1), fail_at=1, error=ConnectorError)
    engine = engine_for(script)
    handler = Collector()
    with pytest.raises(ConnectorError, match="simulated outage"):
        engine.run(handler)
    assert handler.positions == [1]
    assert committed(engine) == {"pos": 1}
    assert len(script.starts) == 1 and script.closes == 1


@pytest.mark.parametrize(("max_batch", "sizes"), [("3", [3, 3, 3, 1]), ("1", [1] * 10), ("100", None)])
def test_max_batch_size_bounds_handler_batches(max_batch: str, sizes: list[int] | None) -> None:
    script = MemoryScript(batches(10))
    engine = engine_for(script, **{"max.batch.size": max_batch})
    handler = Collector()
    engine.run(handler)
    assert handler.positions == list(range(1, 11))
    batch_sizes = [len(b) for b in handler.batches]
    assert all(n <= int(max_batch) for n in batch_sizes)
    if sizes is not None:
        assert batch_sizes == sizes


def test_a_change_split_across_handler_batches_is_committed_after_its_last_record() -> None:
    deletes = [
        [RawChange(CUSTOMERS, "d", (str(n), "n", "e"), None, source(n), offset(n))] for n in (1, 2)
    ]
    script = MemoryScript(deletes)
    engine = engine_for(script, **{"max.batch.size": "1"})
    seen: list[tuple[str, dict | None]] = []

    def handler(records: list[ChangeRecord]) -> None:
        [record] = records
        seen.append(("tombstone" if record.value is None else record.value["op"], committed(engine)))

    engine.run(handler)
    assert seen == [("d", None), ("tombstone", None), ("d", {"pos": 1}), ("tombstone", {"pos": 1})]
    assert committed(engine) == {"pos": 2}


def test_checkpoints_are_committed_without_reaching_the_handler() -> None:
    script = MemoryScript([[insert(1)], [Checkpoint({"pos": 5, "snapshot_completed": True})]])
    engine = engine_for(script)
    handler = Collector()
    engine.run(handler)
    assert handler.positions == [1]
    assert all(isinstance(r, ChangeRecord) for b in handler.batches for r in b)
    assert committed(engine) == {"pos": 5, "snapshot_completed": True}


def test_a_file_offset_store_is_the_next_engines_start_offset(tmp_path: Path) -> None:
    offsets = tmp_path / "offsets.json"
    first = MemoryScript(batches(2, 2))
    handler = Collector()
    engine_for(first, **{"offset.storage.file.filename": str(offsets)}).run(handler)
    assert first.starts == [None] and handler.positions == [1, 2, 3, 4]
    assert orjson.loads(offsets.read_bytes()) == {
        "version": 1, "offsets": [{"partition": PARTITION, "offset": {"pos": 4}}]
    }

    second = MemoryScript(batches(2, 2, 3))
    handler = Collector()
    engine_for(second, **{"offset.storage.file.filename": str(offsets)}).run(handler)
    assert second.starts == [{"pos": 4}]
    assert handler.positions == [5, 6, 7]
    assert orjson.loads(offsets.read_bytes())["offsets"] == [{"partition": PARTITION, "offset": {"pos": 7}}]


def test_engine_runs_into_a_sink(tmp_path: Path) -> None:
    script = MemoryScript(batches(2))
    config = {
        "connector.class": "io.example.cdc.MemoryConnector",  # Debezium-style class name
        "topic.prefix": "test",
        "memory.script": add_script(script),
        "poll.interval.ms": "10",
    }
    engine = Engine(config, sink=FileSink(Config({"dir": str(tmp_path)})), plugins=memory_registry())
    engine.run()
    lines = [orjson.loads(line) for line in (tmp_path / "test.public.customers.jsonl").read_bytes().splitlines()]
    assert [line["key"]["payload"] for line in lines] == [{"id": 1}, {"id": 2}]
    assert [line["value"]["payload"]["op"] for line in lines] == ["c", "c"]


def test_run_needs_a_handler_or_a_sink() -> None:
    with pytest.raises(ValueError, match="needs a handler or a sink"):
        engine_for(MemoryScript([])).run()


@pytest.mark.parametrize(
    ("props", "problems"),
    [
        ({"connector.class": "nosuch"}, ["connector.class: no connector called 'nosuch'; available: memory"]),
        ({"memory.sript": "x", "memory.script": None}, ["memory.sript: unknown property; did you mean memory.script?", "memory.script: is required and has no value"]),
        ({"max.batch.size": "0", "topic.prefix": "a b"},
         ["topic.prefix: 'a b' may contain only letters, digits, '.', '_' and '-'",
          "max.batch.size: '0' is below the minimum 1"]),
        ({"memory.script": "unknown"}, ["memory.script: no script called 'unknown'"]),
    ],
)
def test_invalid_configuration_fails_fast(props: dict, problems: list[str]) -> None:
    config = {"connector.class": "memory", "topic.prefix": "test", "memory.script": add_script(MemoryScript([])), **props}
    with pytest.raises(ConfigError) as err:
        Engine(config, plugins=memory_registry())
    assert sorted(err.value.problems) == sorted(problems)


def test_an_unknown_host_after_a_successful_start_is_retried() -> None:
    """A name-service hiccup while reconnecting a running connector is retried (before any start it stops: the
    configured host name is wrong, tests/data/hostile_configs.yaml)."""
    from cdc_core.errors import UnknownHostError

    script = MemoryScript(batches(1, 1), fail_at=1, failures=2, error=UnknownHostError)
    engine = engine_for(script)
    handler = Collector()
    engine.run(handler)
    assert handler.positions == [1, 2]
    assert len(script.starts) == 3
