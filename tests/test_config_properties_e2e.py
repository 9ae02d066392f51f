"""Documented properties that used to stop a start, now implemented, against a real PostgreSQL through the Engine.

``topic.naming.strategy`` (and a plugin strategy), ``max.queue.size.in.bytes``, ``custom.metric.tags``,
``retriable.restart.connector.wait.ms``; and a configuration with a documented property cdc does
not implement starts with one warning.
"""

from __future__ import annotations

import logging
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest

from cdc_core.engine import Engine
from cdc_core.errors import ConfigError
from cdc_core.hookspecs import hookimpl
from cdc_core.plugins import PluginRegistry
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_core.topics import TopicNamingStrategy

from test_config_catalogue import refused_example  # noqa: F401 - the fixture: a property made refused


def _config(pg, db: str, **extra: Any) -> dict[str, Any]:
    return {"connector.class": "io.debezium.connector.postgresql.PostgresConnector", "database.hostname": pg.host,
            "database.port": pg.port, "database.user": pg.user, "database.dbname": db, "topic.prefix": "shop",
            "poll.interval.ms": 50, "heartbeat.interval.ms": 0, **extra}


class _Run:
    """An engine running in a thread, collecting what its handler gets."""

    def __init__(self, engine: Engine, handler: Callable[[list], None] | None = None):
        self.engine = engine
        self.records: list = []
        self._handler = handler
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.error: BaseException | None = None

    def _run(self) -> None:
        def handle(records: list) -> None:
            if self._handler is not None:
                self._handler(records)
            self.records.extend(records)

        try:
            self.engine.run(handle)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e

    def __enter__(self) -> _Run:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.engine.stop()
        self.thread.join(30)

    def wait(self, predicate: Callable[[], bool], what: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            assert self.error is None, self.error
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.05)

    def topics(self) -> list[str]:
        return [r.topic for r in self.records]


def _table(pg, db: str) -> None:
    pg.execute("CREATE TABLE orders (id int PRIMARY KEY, note text)", dbname=db)
    pg.execute("INSERT INTO orders VALUES (1, 'a'), (2, 'b')", dbname=db)


def test_topic_naming_strategies_name_data_transaction_and_heartbeat_topics(pg_server, pg_db) -> None:
    """Debezium's two strategies as Debezium names PostgreSQL's topics (its tables have no catalog), with the
    delimiter, transaction topic and heartbeat prefix; the Key/Value schema names follow the topic."""
    _table(pg_server, pg_db)
    extra = {"topic.delimiter": "_", "topic.transaction": "tx", "provide.transaction.metadata": "true",
             "topic.heartbeat.prefix": "hb", "heartbeat.interval.ms": 100, "snapshot.mode": "no_data"}
    cases = {
        "io.debezium.schema.SchemaTopicNamingStrategy": "shop_public_orders",
        "io.debezium.schema.DefaultTopicNamingStrategy": "shop_orders",
    }
    for slot, (strategy, topic) in enumerate(cases.items()):
        engine = Engine(_config(pg_server, pg_db, **extra, **{"topic.naming.strategy": strategy,
                                                              "slot.name": f"naming{slot}"}),
                        offset_store=MemoryOffsetStore())
        with _Run(engine) as run:
            run.wait(lambda: "hb_shop" in run.topics(), "a heartbeat")
            pg_server.execute(f"INSERT INTO orders VALUES ({10 + slot}, 'x')", dbname=pg_db)
            run.wait(lambda: topic in run.topics(), f"an event on {topic}")
            run.wait(lambda: run.topics().count("shop_tx") >= 2, "BEGIN and END on shop_tx")
        data = [r for r in run.records if r.topic == topic]
        assert data[0].value["after"] == {"id": 10 + slot, "note": "x"}
        assert data[0].key_schema.name == f"{topic}.Key"
        assert data[0].value_schema.name == f"{topic}.Envelope"
        _drop_slot(pg_server, pg_db, f"naming{slot}")


def _drop_slot(pg_server, pg_db, slot: str) -> None:
    """Drop a slot once its walsender has gone (under load it can outlive the engine's stop by a moment)."""
    deadline = time.monotonic() + 30
    while pg_server.execute(f"SELECT 1 FROM pg_replication_slots WHERE slot_name = '{slot}' AND active", dbname=pg_db):
        assert time.monotonic() < deadline, f"slot {slot} still active 30 s after the engine stopped"
        time.sleep(0.1)
    pg_server.execute(f"SELECT pg_drop_replication_slot('{slot}')", dbname=pg_db)


def test_unset_strategy_keeps_each_connectors_documented_default(pg_server, pg_db) -> None:
    _table(pg_server, pg_db)
    engine = Engine(_config(pg_server, pg_db), offset_store=MemoryOffsetStore())
    with _Run(engine) as run:
        run.wait(lambda: len(run.records) >= 2, "the snapshot")
    assert set(run.topics()) == {"shop.public.orders"}


class _UpperStrategy(TopicNamingStrategy):
    """A third-party strategy: ``<PREFIX>-<TABLE>`` in capitals."""

    name = "upper"
    class_names = ("com.example.UpperStrategy",)

    def data_change_topic(self, table):
        return f"{self.prefix}-{table.table}".upper()


class _StrategyPlugin:
    @hookimpl
    def register_topic_naming_strategies(self) -> list[type]:
        return [_UpperStrategy]


def test_a_plugin_strategy_is_used_by_its_class_name(pg_server, pg_db) -> None:
    _table(pg_server, pg_db)
    plugins = PluginRegistry()
    plugins.register(_StrategyPlugin(), name="upper-topics")
    engine = Engine(_config(pg_server, pg_db, **{"topic.naming.strategy": "com.example.UpperStrategy"}),
                    offset_store=MemoryOffsetStore(), plugins=plugins)
    with _Run(engine) as run:
        run.wait(lambda: len(run.records) >= 2, "the snapshot")
    assert set(run.topics()) == {"SHOP-ORDERS"}
    with pytest.raises(ConfigError, match=r"topic.naming.strategy: no topic naming strategy called 'com.example.Nope'"):
        Engine(_config(pg_server, pg_db, **{"topic.naming.strategy": "com.example.Nope"}), plugins=plugins)


def test_max_queue_size_in_bytes_bounds_the_queue_and_is_reported(pg_server, pg_db) -> None:
    """A slow sink: the queue never holds more than the configured bytes (beyond one batch put into an empty
    queue), the metrics report the bound and the current size, and every row arrives."""
    pg_server.execute("CREATE TABLE big (id int PRIMARY KEY, payload text)", dbname=pg_db)
    pg_server.execute("INSERT INTO big SELECT g, repeat('x', 1000) FROM generate_series(1, 400) g", dbname=pg_db)
    limit = 20_000
    engine = Engine(_config(pg_server, pg_db, **{"max.queue.size.in.bytes": limit, "max.batch.size": 5}),
                    offset_store=MemoryOffsetStore())
    seen: list[int] = []

    def slow(records: list) -> None:
        seen.append(engine.metrics.snapshot.values()["CurrentQueueSizeInBytes"])
        time.sleep(0.005)

    with _Run(engine, slow) as run:
        run.wait(lambda: len(run.records) >= 400, "400 rows")
        values = engine.metrics.snapshot.values()
    assert values["MaxQueueSizeInBytes"] == limit
    assert max(seen) > 0
    # Records go in as they fit (about 1.1 kB each), as Debezium enqueues them one by one.
    assert max(seen) <= limit, max(seen)
    assert sorted(r.value["after"]["id"] for r in run.records) == list(range(1, 401))


def test_max_queue_size_in_bytes_does_not_bound_by_default(pg_server, pg_db) -> None:
    engine = Engine(_config(pg_server, pg_db), offset_store=MemoryOffsetStore())
    assert engine.metrics.streaming.values()["MaxQueueSizeInBytes"] == 0


def test_custom_metric_tags_label_every_metric(pg_server, pg_db) -> None:
    """The tags are appended to the MBean name, as Debezium does, and are labels of every Prometheus sample."""
    import socket

    _table(pg_server, pg_db)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    engine = Engine(_config(pg_server, pg_db, **{"custom.metric.tags": "database=salesdb-streaming,table-group=inventory",
                                                 "metrics.port": port}), offset_store=MemoryOffsetStore())
    assert engine.metrics.mbean_name("streaming") == (
        "debezium.postgres:type=connector-metrics,context=streaming,server=shop,"
        "database=salesdb-streaming,table-group=inventory")
    with _Run(engine) as run:
        run.wait(lambda: len(run.records) >= 2, "the snapshot")
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    samples = [line for line in text.splitlines() if line.startswith("debezium_metrics_")]
    assert samples
    for line in samples:
        assert 'database="salesdb-streaming"' in line and 'table_group="inventory"' in line, line
    assert any(line.startswith("debezium_metrics_TotalNumberOfEventsSeen{") and 'context="snapshot"' in line
               and line.endswith(" 2.0") for line in samples)


@pytest.mark.parametrize(("tags", "reason"), [
    ("database", "'database' is not key=value"),
    ("server=x", "tag 'server' is a name cdc's metrics already use"),
    ("a:b=1", "'a:b=1' holds a character an MBean name cannot"),
    ("a-b=1,a_b=2", "tags 'a-b' and 'a_b' are the same Prometheus label 'a_b'"),
])
def test_malformed_metric_tags_are_refused(pg_server, pg_db, tags: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=f"custom.metric.tags: {reason}"):
        Engine(_config(pg_server, pg_db, **{"custom.metric.tags": tags}))


def test_retriable_restart_waits_the_configured_time(pg_server, pg_db, caplog) -> None:
    """The walsender is killed: the connector restarts after retriable.restart.connector.wait.ms, not before,
    and streams on without losing a change."""
    _table(pg_server, pg_db)
    wait_ms = 2500
    engine = Engine(_config(pg_server, pg_db, **{"retriable.restart.connector.wait.ms": wait_ms,
                                                 "slot.name": "restart_wait"}), offset_store=MemoryOffsetStore())
    with _Run(engine) as run, caplog.at_level(logging.WARNING, logger="cdc.engine"):
        run.wait(lambda: len(run.records) >= 2, "the snapshot")
        pg_server.execute("INSERT INTO orders VALUES (3, 'c')", dbname=pg_db)
        run.wait(lambda: len(run.records) >= 3, "the first streamed change")
        killed = time.monotonic()
        pg_server.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
                          "WHERE slot_name = 'restart_wait'", dbname=pg_db)
        run.wait(lambda: any("retrying in 2.5s" in r.getMessage() for r in caplog.records), "the retry warning")
        pg_server.execute("INSERT INTO orders VALUES (4, 'd')", dbname=pg_db)
        run.wait(lambda: any(r.value and r.value["after"]["id"] == 4 for r in run.records), "the change after")
        elapsed = time.monotonic() - killed
    assert elapsed >= wait_ms / 1000.0
    ids = [r.value["after"]["id"] for r in run.records if r.value]
    assert sorted(set(ids)) == [1, 2, 3, 4]


def test_documented_unimplemented_properties_start_with_one_warning(pg_server, pg_db, caplog) -> None:
    _table(pg_server, pg_db)
    config = _config(pg_server, pg_db, **{"schema.refresh.mode": "columns_diff_exclude_unchanged_toast",
                                          "tasks.max": 1})
    with caplog.at_level(logging.WARNING, logger="cdc.engine"):
        engine = Engine(config, offset_store=MemoryOffsetStore())
    warnings = [r.getMessage() for r in caplog.records if "accepted, no effect in cdc" in r.getMessage()]
    assert warnings == ["accepted, no effect in cdc: schema.refresh.mode, tasks.max"]
    with _Run(engine) as run:
        run.wait(lambda: len(run.records) >= 2, "the snapshot")


def test_a_refused_property_names_itself_and_why(pg_server, pg_db, refused_example) -> None:
    config = _config(pg_server, pg_db, **{refused_example: "columns_diff_exclude_unchanged_toast"})
    with pytest.raises(ConfigError) as e:
        Engine(config)
    assert e.value.problems == [
        f"{refused_example}: documented, but cdc does not implement it, and ignoring it would change "
        "the data delivered (an example refusal)"]
