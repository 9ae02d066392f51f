"""``cdc run`` for a kit scenario: configuration written from the fixture, replay polled until it equals the table."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from cdc_process import CdcProcess, write_properties
from kit.contract import ConnectorFixture, Table, Workdir
from kit.replay import Replayed, replay
from kit.workload import read_rows


def start_cdc(fx: ConnectorFixture, workdir: Workdir, sink: dict[str, Any] | None = None, **source: Any) -> CdcProcess:
    """Write the configuration (the fixture's properties plus ``source`` overrides) and start ``cdc run``.

    ``sink`` (``debezium.sink.*`` properties, ``debezium.sink.type`` included) replaces the file sink.
    """
    props = fx.properties(workdir, **source)
    if sink is not None:
        props = {k: v for k, v in props.items() if not k.startswith("debezium.sink.")} | sink
    write_properties(workdir.config, props)
    return CdcProcess(workdir.config, workdir.root).start()


def wait_replayed(cdc: CdcProcess, fx: ConnectorFixture, table: Table, timeout: float = 60.0,
                  events: Callable[[], list[dict[str, Any]]] | None = None) -> Replayed:
    """Wait until replaying ``table``'s topic gives exactly the table; fail with the differences if it never does.

    ``events`` reads what the sink delivered (file sink lines, ``{"key", "value"}``); by default the file sink's topic file.
    """
    topic = fx.topic(table)
    read = events or (lambda: cdc.events(topic))
    deadline = time.monotonic() + timeout
    rows = read_rows(fx, table)
    while True:
        result = replay(read(), table.key, unavailable=fx.unavailable_value)
        if result.state == rows or (_same(result, rows)):
            return result
        if cdc.proc is not None and cdc.proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(
                f"replaying {topic} ({result.events} events) does not give the table ({len(rows)} rows):\n  "
                + "\n  ".join(result.differences(rows) + result.problems[:10]) + f"\ncdc log tail:\n{cdc.log()[-3000:]}")
        time.sleep(0.2)


def _same(result: Replayed, rows: dict[tuple[Any, ...], dict[str, Any]]) -> bool:
    """Equal where the table has columns (events from before an ``ADD COLUMN`` lack the new one: it is None)."""
    if set(result.state) != set(rows):
        return False
    return all(result.state[k].get(c) == v for k, row in rows.items() for c, v in row.items())
