"""The engine: connector thread -> bounded queue -> serializer -> sink -> offset commit.

Offsets are committed only for records the sink (or handler) has acknowledged, so a crash at
any point loses nothing: a restart re-reads at most the batch that was not acknowledged.
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

from cdc_core import exactly_once
from cdc_core.config import Config, Fields
from cdc_core.config import common
from cdc_core.config.catalogue import Catalogue, Report, classify
from cdc_core.config.config import exclusive
from cdc_core.converters import converter_names
from cdc_core.envelope import EventBuilder
from cdc_core.table_events import EventSettings
from cdc_core.errors import ConfigError, ConnectorError, OffsetStoreError, PluginError, RetriableError, UnknownHostError
from cdc_core.events import ChangeRecord, Checkpoint, partition_key
from cdc_core.logs import ConnectorLogger, connector_logger
from cdc_core.metric_tags import parse_metric_tags
from cdc_core.metrics import ConnectorMetrics
from cdc_core.plugins import PluginRegistry, registry
from cdc_core.queue import BatchQueue
from cdc_core.signals.channels import InProcessSignalChannel
from cdc_core.signals.config import SIGNAL_FIELDS, signal_problems
from cdc_core.signals.controller import SignalController
from cdc_core.sinks.retry import SinkStopped
from cdc_core.spi.connector import Connector, ConnectorContext
from cdc_core.spi.sink import Sink, SinkRecord
from cdc_core.record_block import RecordBlock
from cdc_core.record_block import count as record_count
from cdc_core.snapshot.processes import SerializedRecords, WorkerPipeline
from cdc_core.transforms.chain import TRANSFORM_FIELDS, build_chain, chain_problems

Handler = Callable[[list[ChangeRecord]], None]


def record_size(record: ChangeRecord | Checkpoint) -> int:
    """The bytes a queued record counts for ``max.queue.size.in.bytes``: its topic, key and value as JSON.

    Debezium measures the SourceRecord's objects in the JVM; the JSON size is the closest Python
    measure of the same thing (a Checkpoint, which carries no event, counts 0).
    """
    if record.__class__ is Checkpoint:
        return 0
    if record.__class__ is RecordBlock:  # a snapshot worker's records as their lines (cdc_core.record_block)
        return record.nbytes
    if record.__class__ is SinkRecord:  # serialized by a snapshot worker process (cdc_core.snapshot.processes)
        return len(record.topic) + len(record.key or b"") + len(record.value or b"")
    return len(record.topic) + len(orjson.dumps(record.key, default=str)) + len(orjson.dumps(record.value, default=str))


def _sink_handler(serialize: Callable[[list], list], write: Callable[[list], None],
                  worker_records: Callable[[], bool], takes_blocks: bool = False) -> Handler:
    """Serialize a batch and write it; records a snapshot worker process serialized already pass as they are
    (looked for only once ``worker_records()`` says there were any): a ``RecordBlock`` as it is to a sink
    that ``takes_blocks`` (the file sink), as its SinkRecords to any other."""
    def handle(records: list) -> None:
        if not worker_records():
            write(serialize(records))
            return
        out: list = []
        run: list = []
        for r in records:
            if r.__class__ is RecordBlock:
                if run:
                    out += serialize(run)
                    run = []
                if takes_blocks:
                    out.append(r)
                else:
                    out += r.records()
            elif r.__class__ is SinkRecord:
                if run:
                    out += serialize(run)
                    run = []
                out.append(r)
            else:
                run.append(r)
        if run:
            out += serialize(run)
        write(out)
    return handle


def connector_class(config: Config, plugins: PluginRegistry | None = None) -> type:
    """The connector class named by ``connector.class`` (Debezium class name or short name)."""
    name = config.get(common.CONNECTOR_CLASS)
    if not name:
        raise ConfigError([f"{common.CONNECTOR_CLASS.name}: is required (e.g. postgres)"])
    try:
        return (plugins or registry()).get("connector", str(name).strip())
    except PluginError as e:
        raise ConfigError([f"{common.CONNECTOR_CLASS.name}: {e}"]) from None


def _store_problems(config: Config, plugins: PluginRegistry) -> list[str]:
    """What the offset store and schema history store named in the configuration say is missing (``config_problems``)."""
    out: list[str] = []
    for kind, field in (("offset store", common.OFFSET_STORAGE), ("schema history store", common.SCHEMA_HISTORY)):
        if config.get(field.name) in (None, ""):
            continue
        try:
            cls = plugins.get(kind, str(config.get(field)).strip())
        except PluginError:
            continue  # reported when the store is made, as before
        check = getattr(cls, "config_problems", None)
        if check is not None:
            out += check(config)
    return out


def store_fields(config: Config, plugins: PluginRegistry | None = None) -> Fields:
    """The properties of the configured offset store and schema history store (``offset.storage.redis.*``, ...)."""
    out = Fields()
    for kind, field in (("offset store", common.OFFSET_STORAGE), ("schema history store", common.SCHEMA_HISTORY)):
        try:
            cls = (plugins or registry()).get(kind, config.get(field))
        except PluginError:
            continue
        out = out + getattr(cls, "fields", Fields())
    return out


def connector_report(config: Config, plugins: PluginRegistry | None = None,
                     display: Callable[[str], str] = lambda name: name) -> Report:
    """A connector configuration's problems in three groups: errors (bad values, undocumented names,
    exclusive pairs, the connector's own checks), refused properties, and those accepted without effect.

    ``display`` gives a property's name as the user wrote it (``debezium.source.`` in the server layout).
    """
    try:
        cls = connector_class(config, plugins)
    except ConfigError as e:
        problems = e.problems + config.problems(common.COMMON_FIELDS, check_unknown=False)
        return Report(errors=[display(p) for p in problems])
    converters = Fields(prefixes=[f"{name}." for name in converter_names(config)])
    fields: Fields = (common.COMMON_FIELDS + SIGNAL_FIELDS + cls.fields + converters + store_fields(config, plugins)
                      + TRANSFORM_FIELDS)
    report = classify(dict(config), fields, Catalogue.load(getattr(cls, "catalogue", cls.name)), display)
    problems = config.problems(fields, check_unknown=False)
    problems += exclusive(config, common.EXCLUSIVE_PAIRS)
    problems += chain_problems(config, plugins or registry())
    problems += _tasks_problems(config, cls, display)
    if not problems and not report.problems:
        problems += signal_problems(config, plugins or registry())
        problems += _store_problems(config, plugins or registry())
    if not problems and not report.problems:
        try:
            EventSettings(config, cls.source_schema, plugins or registry())
        except ConfigError as e:
            problems += e.problems
    if not problems and not report.problems:
        context = ConnectorContext(log=connector_logger("cdc", cls.name, "-"), plugins=plugins or registry())
        problems += cls(config, context).validate()
    report.errors[:0] = [display(p) for p in problems]
    return report


def _tasks_problems(config: Config, cls: type, display: Callable[[str], str]) -> list[str]:
    """``tasks.max`` > 1 on a connector whose Debezium class refuses it (``max_tasks_refusal``: its message).

    Debezium 2.7.4's binlog connectors (MySQL, MariaDB) throw "Only a single connector task may be started"
    from ``taskConfigs``; PostgreSQL's returns its one task whatever tasks.max says (the property is then
    accepted without effect), and so does cdc's Db2 as its chapter says ("always uses a single task"; 2.7.4's
    Db2Connector code throws instead); SQL Server spreads database.names over the tasks (cdc_sqlserver.tasks).
    """
    refusal = getattr(cls, "max_tasks_refusal", None)
    try:
        tasks = config.get(common.TASKS_MAX)
    except Exception:  # noqa: BLE001 - a bad value is reported by config.problems
        return []
    if refusal and isinstance(tasks, int) and tasks > 1:
        return [f"{display(common.TASKS_MAX.name)}={tasks}: {refusal} (the {cls.name} connector runs one task)"]
    return []


def connector_problems(config: Config, plugins: PluginRegistry | None = None) -> list[str]:
    """Every problem that stops a connector configuration: errors first, then refused properties."""
    return connector_report(config, plugins).problems


#: glibc ``mallopt`` parameters and the values the engine gives them (see ``_tune_malloc``).
#: The test suite's JsonConverter grammar check (cdc_core.serializers.checking), read once.
_CHECK_JSON = bool(os.environ.get("CDC_CHECK_JSON"))
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_TRIM_THRESHOLD = 64 * 1024 * 1024
_MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's own upper bound for its dynamic threshold
_malloc_tuned = False


def _tune_malloc() -> None:
    """Keep freed heap memory for the next batch instead of returning it to the OS (glibc only).

    A batch's serialized records (kilobytes each with schemas) are freed together; with glibc's
    default 128 KiB trim threshold the pages go back to the OS after every batch and are faulted
    in again for the next (about one page fault and 1 us of kernel time per record). Skipped where
    the process chose its own settings (``MALLOC_TRIM_THRESHOLD_`` / ``MALLOC_MMAP_THRESHOLD_``).
    """
    global _malloc_tuned
    if _malloc_tuned or "MALLOC_TRIM_THRESHOLD_" in os.environ or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return
    _malloc_tuned = True
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc"):
            return
        libc = ctypes.CDLL(None)
        libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)
        libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
    except (OSError, ValueError, AttributeError):  # no confstr name, no libc symbol
        pass


#: Net allocations of container objects between young-generation collections (CPython's default is 700).
#: Events are acyclic and freed by reference counting, so a collection finds nothing to free; what it costs is a
#: scan of every young container still alive, and in a pipeline those are the queued records and the reader's
#: block of rows: a 300k-row PostgreSQL snapshot made 26 collections of about 25 ms each at 50,000 (0.5-0.7 s,
#: 2.3-2.9 us a row, measured with gc.callbacks in benchmarks/pg_snapshot.py's run) and none at 500,000, whose
#: count the live set does not reach. Garbage with cycles (rare here) waits for at most that many allocations.
YOUNG_GC_THRESHOLD = 500_000


def _tune_gc() -> None:
    """Collect young objects less often (``YOUNG_GC_THRESHOLD``): events are acyclic dicts freed by reference
    counting, and the default threshold spends a large share of a pipeline's time scanning them."""
    young, middle, old = gc.get_threshold()
    if young < YOUNG_GC_THRESHOLD:
        gc.set_threshold(YOUNG_GC_THRESHOLD, middle, old)


def _connect_serializer(config: Config) -> Any:
    """The serializer of Kafka Connect's converter properties (JsonConverter's when none is named)."""
    from cdc_core.serializers.formats import build_serializer, settings_from_connect

    return build_serializer(settings_from_connect(config))


class Engine:
    """Runs one connector: snapshot and streaming into a handler or a sink, committing acknowledged offsets.

    Library use::

        engine = Engine({"connector.class": "postgres", ...}, offset_store=MemoryOffsetStore())
        engine.run(lambda records: ...)   # returns when stopped (engine.stop()) or the connector ends
    """

    def __init__(
        self,
        config: Mapping[str, Any] | Config,
        *,
        sink: Sink | None = None,
        serializer: Any = None,
        offset_store: Any = None,
        history_store: Any = None,
        plugins: PluginRegistry | None = None,
        display: Callable[[str], str] | None = None,
        also_ignored: Sequence[str] = (),
    ):
        """``display`` gives a property's name as written (``debezium.source.`` in a server configuration);
        ``also_ignored`` adds documented properties the caller accepted without effect to the one warning."""
        self.config = config if isinstance(config, Config) else Config(config)
        self.plugins = plugins or registry()
        report = connector_report(self.config, self.plugins, display or (lambda name: name))
        report.ignored[:0] = also_ignored
        if report.problems:
            raise ConfigError(report.problems)
        self.connector_class = connector_class(self.config, self.plugins)
        # A connector may change a shared property's default (declared as data on its class).
        defaults = getattr(self.connector_class, "defaults", {})
        unset = {k: v for k, v in defaults.items() if self.config.get(k) in (None, "")}
        if unset:
            self.config = self.config.with_values(**unset)
        # Heartbeats only by such a default (PostgreSQL's minute, where Debezium's default is off) send no heartbeat
        # at a snapshot's end: Debezium, off by default, sends none there, and the chapters' examples (a filter on
        # value.op) would meet a record Debezium never writes.
        self._heartbeat_at_snapshot_end = common.HEARTBEAT_INTERVAL_MS.name not in unset
        self.name = self.config.get(common.NAME) or self.config.get(common.TOPIC_PREFIX)
        #: ``transforms=``: the single message transforms (None when there are none: no per-record cost).
        self.transforms = build_chain(self.config, self.plugins)
        self.log: ConnectorLogger = connector_logger("cdc.engine", self.connector_class.name, self.name)
        if report.warning() is not None:
            self.log.warning("%s", report.warning())
        self.sink = sink
        if serializer is None and sink is not None:
            # key.converter / value.converter (JsonConverter, CloudEventsConverter, AvroConverter) and their options.
            serializer = _connect_serializer(self.config)
        self.serializer = serializer
        #: Exactly once (cdc_core.exactly_once): the sink commits each batch's offsets in the batch's transaction,
        #: so the engine hands them to it and never writes the offset store itself.
        self._sink_commits_offsets = exactly_once.enabled(self.config)
        if self._sink_commits_offsets:
            self._begin_exactly_once(offset_store, display or (lambda name: name))
        self.offset_store = offset_store if offset_store is not None else self._make_offset_store()
        self.history_store = history_store
        self.queue: BatchQueue[ChangeRecord | Checkpoint] = BatchQueue(
            self.config.get(common.MAX_QUEUE_SIZE), self.config.get(common.MAX_QUEUE_SIZE_IN_BYTES), record_size)
        #: Debezium's snapshot and streaming metrics of this engine's connector.
        # A connector may report under another connector's JMX domain (YugabyteDB's: debezium.postgres).
        plugin = getattr(self.connector_class, "metrics_plugin", self.connector_class.name)
        self.metrics = ConnectorMetrics(plugin, self.config.get(common.TOPIC_PREFIX), self.queue,
                                        parse_metric_tags(self.config.get(common.CUSTOM_METRIC_TAGS)),
                                        getattr(self.connector_class, "metrics_task", None))
        self._metrics_server = None
        self.max_batch = self.config.get(common.MAX_BATCH_SIZE)
        self.poll_interval = self.config.get(common.POLL_INTERVAL_MS) / 1000.0
        self.flush_interval = self.config.get(common.OFFSET_FLUSH_INTERVAL_MS) / 1000.0
        self._stopping = threading.Event()
        self._connector: Connector | None = None
        # Reentrant: stop() may run in a signal handler while this thread holds the lock.
        self._connector_lock = threading.RLock()
        self._producer_error: BaseException | None = None
        #: The serializer of ``run`` into the sink (None with a handler): what snapshot worker processes use.
        self._sink_serializer: Any = None
        #: Whether the connector handed on records serialized by snapshot worker processes (set before queueing them).
        self._worker_records = False
        self._acked_offset: dict[str, Any] | None = None
        #: Exactly once: the offsets the batch being written commits with it (``_offsets_after``).
        self._batch_offsets: list[tuple[dict[str, Any], dict[str, Any]]] = []
        self._flushed_offset: dict[str, Any] | None = None
        self._produced = 0
        self._acked = 0
        self._progress = threading.Condition()
        self.partition: dict[str, Any] | None = None
        #: A connector of several partitions (SQL Server's database.names=db1,db2): the last acknowledged offset
        #: of each, by its key (``partition_key``); empty for the usual one-partition connector.
        self._acked_partitions: dict[bytes, tuple[dict[str, Any], dict[str, Any]]] = {}
        self._multi_partition = False
        # Signals and notifications (cdc_core.signals): the in-process channel and listeners.
        self._signals = InProcessSignalChannel()
        self._notification_listeners: list[Callable[[Any], None]] = []

    def _begin_exactly_once(self, offset_store: Any, display: Callable[[str], str]) -> None:
        """Refuse what cannot be exactly once; else make the sink transactional before the offsets are read."""
        problems = exactly_once.problems(self.config, getattr(self.sink, "name", None),
                                         getattr(self.sink, "bootstrap", None), display)
        if offset_store is not None and getattr(offset_store, "name", None) != "kafka":
            problems.append(f"{display(common.EXACTLY_ONCE_SUPPORT.name)}=required: needs KafkaOffsetBackingStore, "
                            f"not {offset_store!r}")
        if problems:
            raise ConfigError(problems)
        # First, so a killed process's open transaction is aborted and the offsets topic reads to its end.
        self.sink.begin_exactly_once(self.config.get(common.OFFSET_TOPIC), self.name,  # type: ignore[union-attr]
                                     exactly_once.transactional_id(self.config))

    def _make_offset_store(self) -> Any:
        name = self.config.get(common.OFFSET_STORAGE)
        if not self.config.get(common.OFFSET_FILE) and name == common.OFFSET_STORAGE.default:
            name = "memory"  # no file given: offsets live as long as the process, as in Debezium's embedded tests
        return self.plugins.get("offset store", name)(self.config)

    # -- control -------------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask the engine to drain, commit and return from ``run`` (safe from signal handlers and threads)."""
        self._stopping.set()
        # A sink retrying against a broker that is down stops waiting: its batch fails unacknowledged.
        stop_sink = getattr(self.sink, "stop", None)
        if callable(stop_sink):
            stop_sink()
        with self._connector_lock:
            if self._connector is not None:
                self._connector.stop()

    def signal(self, type: str, data: Any = None, id: str | None = None) -> str:  # noqa: A002
        """Send a signal (``execute-snapshot``, ``stop-snapshot``, ``pause-snapshot``, ``resume-snapshot``, ``log``).

        ``data`` is the signal's data object (or its JSON text); it runs on the connector thread at the
        next batch. Returns the signal's id (``id`` or a new UUID). Thread-safe.
        """
        return self._signals.send(type, data, id)

    def add_notification_listener(self, listener: Callable[[Any], None]) -> None:
        """Call ``listener(notification)`` (a ``cdc_core.notifications.Notification``) for every notification."""
        self._notification_listeners.append(listener)

    @property
    def stopping(self) -> bool:
        """True once ``stop`` was called."""
        return self._stopping.is_set()

    # -- producer ------------------------------------------------------------------------------

    def _new_connector(self) -> Connector:
        log = connector_logger(f"cdc.{self.connector_class.name}", self.connector_class.name, self.name)
        ctx = ConnectorContext(log=log, history=self.history_store, plugins=self.plugins, metrics=self.metrics)
        return self.connector_class(self.config, ctx)

    def _check_stored_offset(self, offset: dict[str, Any] | None) -> None:
        """Refuse a stored offset that is not of the connector's ``offset_shape``, naming where it is stored."""
        shape = getattr(self.connector_class, "offset_shape", None)
        if offset is None or shape is None:
            return
        problems = shape.problems(offset)
        if problems:
            where = getattr(self.offset_store, "path", None)
            where = f"offsets file {where}" if where is not None else f"the {self.offset_store.name} offset store"
            raise OffsetStoreError(
                f"{where}: the offset of partition {self.partition} is not a {self.connector_class.name} offset "
                f"({'; '.join(problems)}); refusing to start. Restore it from a backup, or delete it to start over "
                "deliberately (a new snapshot, per snapshot.mode).")

    def _produce(self) -> None:
        retries = 0
        max_retries = self.config.get(common.ERRORS_MAX_RETRIES)
        delay = self.config.get(common.ERRORS_RETRY_DELAY_INITIAL_MS) / 1000.0
        max_delay = self.config.get(common.ERRORS_RETRY_DELAY_MAX_MS) / 1000.0
        # retriable.restart.connector.wait.ms, when set: Debezium's constant wait before each restart.
        restart_wait = self.config.get(common.RETRIABLE_RESTART_WAIT_MS)
        started = False  # whether a connector ever started (connected) in this engine
        chain = self.transforms
        try:
            while not self.stopping:
                connector = self._new_connector()
                self.partition = connector.partition()
                with self._connector_lock:
                    self._connector = connector
                if self.stopping:  # stop() came while the connector was being set up
                    connector.stop()
                builder = EventBuilder(self.config, connector.source_schema, self.partition, self.plugins,
                                       getattr(self.connector_class, "catalog_in_data_collection", False))
                builder.heartbeat.at_snapshot_end = self._heartbeat_at_snapshot_end
                if self._sink_serializer is not None and hasattr(connector, "worker_pipeline"):
                    # snapshot.max.threads > 1: snapshot chunks may be serialized in worker processes.
                    connector.worker_pipeline = WorkerPipeline(builder, chain, self._sink_serializer)
                # The hook of cdc_core.signals: signal-table rows, watermarks, ad hoc snapshots, notifications.
                signals = SignalController(
                    self.config, connector, self.plugins,
                    connector_logger("cdc.signals", self.connector_class.name, self.name, "signals"),
                    metrics=self.metrics, connector_name=self.config.get(common.TOPIC_PREFIX), partition=self.partition, listeners=self._notification_listeners, in_process=self._signals,
                    stopping=self._stopping.is_set,
                    with_catalog=getattr(self.connector_class, "catalog_in_data_collection", False))
                builders = None
                try:
                    if callable(getattr(connector, "partitions", None)):
                        # Several partitions: each its own stored offset, its own event builder (heartbeats,
                        # transaction blocks), its records and checkpoints carrying its partition.
                        builders, offset = self._start_partitions(connector)
                    else:
                        offset = self._acked_offset
                        if offset is None:
                            offset = self.offset_store.get(self.partition)
                            self._check_stored_offset(offset)
                        builder.restore(offset)
                        connector.start(offset)
                    started = True
                    signals.start(offset)
                    for raw in signals.wrap(connector.stream()):
                        if retries:
                            retries = 0
                            delay = self.config.get(common.ERRORS_RETRY_DELAY_INITIAL_MS) / 1000.0
                        if not raw:
                            continue
                        serialized = after = streamed = None
                        if raw[-1].__class__ is SerializedRecords:  # built, transformed, serialized by a worker
                            last = raw.pop()
                            serialized, after, streamed = last.records, last.after, last.streamed
                            self._worker_records = True
                        records = builder.build(raw) if builders is None else self._build_partition(builders, raw)
                        self.metrics.record_batch(records)
                        if chain is not None:
                            records = chain.apply(records)
                        weight = None
                        if serialized is not None:
                            if streamed is not None:
                                self.metrics.record_streamed(*streamed)
                            elif serialized:
                                self.metrics.record_serialized(record_count(serialized), serialized[0].topic, records)
                            records += serialized
                            if after:  # the raw changes after a worker's records (a streaming batch's offset)
                                tail = builder.build(after) if builders is None else self._build_partition(builders, after)
                                self.metrics.record_batch(tail)
                                records += chain.apply(tail) if chain is not None else tail
                            weight = record_count(records)
                        with self._progress:
                            self._produced += len(records) if weight is None else weight
                        if not self.queue.put(records, self._stopping.is_set, weight):
                            break
                    return
                except RetriableError as e:
                    if isinstance(e, UnknownHostError) and not started:
                        raise  # the configured host name was never reachable: a configuration error
                    retries += 1
                    if max_retries >= 0 and retries > max_retries:
                        raise
                    wait = delay if restart_wait is None else restart_wait / 1000.0
                    self.log.warning("%s; retrying in %.1fs (attempt %d%s)", e, wait, retries,
                                     "" if max_retries < 0 else f" of {max_retries}")
                    self._wait_acked()
                    self._stopping.wait(wait)
                    delay = min(delay * 2, max_delay)
                finally:
                    with self._connector_lock:
                        self._connector = None
                    signals.close()
                    connector.close()
        except BaseException as e:  # handed to run(), which raises it after draining
            self._producer_error = e
        finally:
            self.queue.close()

    def _start_partitions(self, connector: Any) -> tuple[dict[bytes, EventBuilder], dict[str, Any] | None]:
        """Start a connector of several partitions with each one's offset; its builders and its first offset.

        The contract (optional): ``partitions()`` lists the partitions, ``start_partitions([(partition,
        offset or None), ...])`` replaces ``start``, and every batch ``stream()`` yields is a list with a
        ``partition`` attribute (``cdc_core.events.PartitionBatch``) naming whose changes it holds;
        ``signal_partition()`` (optional) names the partition whose offset the signal controller starts from.
        """
        self._multi_partition = True
        builders: dict[bytes, EventBuilder] = {}
        offsets = []
        for part in connector.partitions():
            key = partition_key(part)
            acked = self._acked_partitions.get(key)
            offset = acked[1] if acked is not None else self.offset_store.get(part)
            if acked is None:
                saved, self.partition = self.partition, part
                try:
                    self._check_stored_offset(offset)
                finally:
                    self.partition = saved
            builders[key] = EventBuilder(self.config, connector.source_schema, part, self.plugins,
                                         getattr(self.connector_class, "catalog_in_data_collection", False))
            builders[key].heartbeat.at_snapshot_end = self._heartbeat_at_snapshot_end
            builders[key].restore(offset)
            offsets.append((part, offset))
        connector.start_partitions(offsets)
        # The offset the signal controller resumes an ad hoc snapshot from: the partition whose stream carries
        # the signals and watermarks (``signal_partition()``, optional), else the first.
        first = offsets[0][1] if offsets else None
        pick = getattr(connector, "signal_partition", None)
        if callable(pick):
            key = partition_key(pick())
            first = next((o for p, o in offsets if partition_key(p) == key), first)
        return builders, first

    @staticmethod
    def _build_partition(builders: dict[bytes, EventBuilder], raw: Any) -> list[ChangeRecord | Checkpoint]:
        """Build one batch of a connector of several partitions with its partition's builder."""
        part = getattr(raw, "partition", None)
        if part is None:
            raise ConnectorError("a connector of several partitions yielded a batch that does not say whose it is "
                                 "(a list with a partition attribute); refusing to guess where its offsets belong")
        records = builders[partition_key(part)].build(raw)
        return [r._replace(partition=part) if r.__class__ is Checkpoint and r.partition is None else r
                for r in records]

    def _wait_acked(self) -> None:
        """Wait until every produced record is acknowledged (so a retry restarts from the true position)."""
        with self._progress:
            while self._acked < self._produced and self._producer_error is None and not self.stopping:
                self._progress.wait(0.1)

    # -- consumer ------------------------------------------------------------------------------

    def run(self, handler: Handler | None = None) -> None:
        """Run until stopped or the connector finishes; raise the connector's or sink's error, if any."""
        if handler is None:
            if self.sink is None:
                raise ValueError("Engine.run needs a handler or a sink")
            if self.serializer is None:
                self.serializer = _connect_serializer(self.config)
            self._sink_serializer = self.serializer
            write = self.sink.write
            if self._sink_commits_offsets:
                write = lambda out: self.sink.write_transaction(out, self._batch_offsets)  # noqa: E731
            takes_blocks = getattr(self.sink, "takes_blocks", False) and not self._sink_commits_offsets
            handler = _sink_handler(self.serializer.serialize, write, lambda: self._worker_records, takes_blocks)
        elif _CHECK_JSON:  # the test suite: records handed to a handler are checked as if serialized
            from cdc_core.serializers.checking import wrap_handler

            handler = wrap_handler(handler)
        port = self.config.get(common.METRICS_PORT)
        if port is not None and self._metrics_server is None:
            from cdc_core.prometheus import serve

            self._metrics_server = serve(self.metrics, port)
            self.log.info("serving metrics at http://127.0.0.1:%d/metrics", self._metrics_server.server_port)
        _tune_gc()
        _tune_malloc()
        producer = threading.Thread(target=self._produce, name="cdc-connector", daemon=True)
        producer.start()
        last_flush = time.monotonic()
        try:
            while True:
                batch = self.queue.get(self.max_batch, self.poll_interval)
                if batch:
                    records = [r for r in batch if r.__class__ is not Checkpoint]
                    if self._sink_commits_offsets:
                        self._batch_offsets = self._offsets_after(batch)
                        if not records and self._batch_offsets:  # a checkpoint moves the offset: a transaction of it alone
                            self.sink.write_transaction([], self._batch_offsets)
                    if records:
                        try:
                            handler(records)
                        except SinkStopped as e:
                            if not self.stopping:
                                raise
                            # A clean stop: what was acknowledged is committed below, this batch comes again.
                            self.log.info("stopped while the sink was retrying (%s); the unacknowledged batch is "
                                          "delivered again after the restart", e)
                            break
                    self._acknowledge(batch)
                elif self.queue.drained:
                    break
                if self._acked_offset is not self._flushed_offset and time.monotonic() - last_flush >= self.flush_interval:
                    self._flush()
                    last_flush = time.monotonic()
        except BaseException:
            self.stop()
            raise
        finally:
            producer.join(timeout=30)
            self._release(failing=sys.exc_info()[1] is not None)
        if self._producer_error is not None:
            raise self._producer_error

    def _release(self, failing: bool) -> None:
        """Commit what was acknowledged and close the stores, the sink and the metrics server.

        Each step runs even if another failed; while an error is already on its way out (``failing``),
        a failure here is logged instead of hiding it, otherwise the first one is raised.
        """
        steps: list[Callable[[], None]] = []
        if self._acked_offset is not self._flushed_offset:
            steps.append(self._flush)
        steps.append(self.offset_store.close)
        if self.sink is not None:
            steps.append(self.sink.close)
            if callable(getattr(self.serializer, "close", None)):  # a schema registry's connections
                steps.append(self.serializer.close)
        if self._metrics_server is not None:
            steps.append(self._metrics_server.shutdown)
        first: BaseException | None = None
        for step in steps:
            try:
                step()
            except Exception as e:  # noqa: BLE001 - every resource gets its chance to close
                if failing or first is not None:
                    self.log.warning("while stopping: %s", e)
                else:
                    first = e
        self._metrics_server = None
        if first is not None:
            raise first

    @staticmethod
    def _last_offset(batch: list[ChangeRecord | Checkpoint]) -> dict[str, Any] | None:
        """The offset of the batch's last record that carries one (records of snapshot worker processes carry none)."""
        for r in reversed(batch):
            if r.__class__ is not SinkRecord and r.offset is not None:
                return r.offset
        return None

    def _partition_offsets(self, batch: list[ChangeRecord | Checkpoint]) -> dict[bytes, tuple[dict[str, Any], dict[str, Any]]]:
        """Several partitions: the last acknowledged offset of each once ``batch`` is acknowledged too."""
        out = dict(self._acked_partitions)
        for r in batch:
            if r.offset is not None and r.partition is not None:
                out[partition_key(r.partition)] = (r.partition, r.offset)
        return out

    def _offsets_after(self, batch: list[ChangeRecord | Checkpoint]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """What ``_flush`` would commit once ``batch`` is acknowledged, if the batch moves an offset (else empty)."""
        if self._multi_partition:
            after = self._partition_offsets(batch)
            return list(after.values()) if after != self._acked_partitions else []
        offset = self._last_offset(batch)
        if offset is None or self.partition is None:
            return []
        return [(self.partition, offset)]

    def _acknowledge(self, batch: list[ChangeRecord | Checkpoint]) -> None:
        offset = self._last_offset(batch)
        if offset is not None:
            self._acked_offset = offset
        if self._multi_partition:
            self._acked_partitions = self._partition_offsets(batch)
        with self._progress:
            self._acked += record_count(batch) if self._worker_records else len(batch)
            self._progress.notify_all()

    def _flush(self) -> None:
        offset = self._acked_offset
        if offset is None or self.partition is None:
            return
        if self._sink_commits_offsets:
            pass  # already committed with each batch, in its transaction
        elif self._acked_partitions:
            self.offset_store.commit(list(self._acked_partitions.values()))
        else:
            self.offset_store.commit([(self.partition, offset)])
        self._flushed_offset = offset
        with self._connector_lock:
            connector = self._connector
        if connector is not None:
            connector.acknowledge(offset)
