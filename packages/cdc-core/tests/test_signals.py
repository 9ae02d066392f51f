"""Signals without a database: names and filters as data, the file channel, notifications, the stream hook."""

from __future__ import annotations

import threading
import time

import orjson
import pytest

from cdc_core.cli import main
from cdc_core.config import Config
from cdc_core.engine import Engine, connector_problems
from cdc_core.events import RawChange
from cdc_core.notifications.channels import KEY_SCHEMA, VALUE_SCHEMA, SinkNotificationChannel
from cdc_core.notifications.spi import Notification
from cdc_core.relational import Column, Table, TableId
from cdc_core.schema import INT32, OPTIONAL_STRING, STRING
from cdc_core.signals.channels import FileSignalChannel, append_signal
from cdc_core.signals.conditions import parse_filter
from cdc_core.signals.names import SignalDataError, select_tables
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from memory_connector import MemoryScript, add_script, insert, memory_registry, offset, source

PRODUCTS = Table(TableId(None, "public", "products"), [
    Column("id", "int4", INT32, int), Column("color", "text", OPTIONAL_STRING, str),
    Column("Qty", "int4", INT32, int)], ["id"])
DOTTED = Table(TableId(None, "public", "My.Table"), [Column("id", "int4", INT32, int)], ["id"])
SIGNALS = Table(TableId(None, "public", "debezium_signal"), [
    Column("id", "varchar", STRING, str), Column("type", "varchar", STRING, str),
    Column("data", "varchar", OPTIONAL_STRING, str)], ["id"])


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@pytest.mark.parametrize("entries, expected", [
    (["public.products"], ["public.products"]),
    (['"public"."My.Table"'], ["public.My.Table"]),
    ([r"public\..*"], ["public.My.Table", "public.products"]),
    ([], []),
])
def test_data_collections_select_captured_tables(entries, expected):
    assert [t.id.identifier for t in select_tables(entries, [PRODUCTS, DOTTED])] == expected


def test_entries_naming_no_table_are_skipped_when_others_name_one():
    """With ``unmatched``, Debezium 2.7.4 passes over a name it has no table for (expandAndDedupeDataCollectionIds
    keeps it; the snapshot reports it UNKNOWN_SCHEMA), even when no name matches."""
    unmatched: list[str] = []
    tables = select_tables(["invalid1", "public.products", "invalid2"], [PRODUCTS, DOTTED], unmatched=unmatched)
    assert [t.id.identifier for t in tables] == ["public.products"] and unmatched == ["invalid1", "invalid2"]
    unmatched = []
    assert select_tables(["invalid1"], [PRODUCTS], unmatched=unmatched) == [] and unmatched == ["invalid1"]


@pytest.mark.parametrize("entry, reason", [
    ("public.products'; DROP TABLE products; --", "matches no captured table"),
    ('"public"."products"; DROP TABLE x', "is not a quoted name"),
    ('"public"."products', "unterminated"),
    ("(a+)+$", "nested quantifiers"),
    ("public.[", "not a valid regular expression"),
    (42, "is not a table name"),
])
def test_bad_data_collections_are_refused(entry, reason):
    with pytest.raises(SignalDataError, match=reason):
        select_tables([entry], [PRODUCTS, DOTTED])


@pytest.mark.parametrize("text, sql, params", [
    ("color='blue'", '"color" = %s', ["blue"]),
    ("color = 'it''s' AND qty > 10", '("color" = %s) AND ("Qty" > %s)', ["it's", 10]),
    ('"Qty" BETWEEN 1 AND 2.5 OR color IS NULL', '("Qty" BETWEEN %s AND %s) OR ("color" IS NULL)', [1, 2.5]),
    ("NOT (id IN (1, 2)) AND color NOT LIKE 'b%'", '(NOT ("id" IN (%s, %s))) AND ("color" NOT LIKE %s)', [1, 2, "b%"]),
    ("SELECT * FROM [public].[products] WHERE id = 0", '"id" = %s', [0]),
])
def test_filters_render_as_quoted_columns_and_parameters(text, sql, params):
    rendered, values = parse_filter(text, PRODUCTS, allow_select=True).render(quote, "%s")
    assert rendered == sql
    assert [float(v) if not isinstance(v, (str, int)) else v for v in values] == params


@pytest.mark.parametrize("text, reason", [
    ("color = 'blue'; DROP TABLE products", "';' at position 14 is not allowed"),
    ("color = 'x' -- comment", "'-' at position 12"),
    ("color = blue", "expected a literal"),
    ("lower(color) = 'x'", "'lower' is not a column"),
    ("id = (SELECT 1)", "expected a literal"),
    ("1 = 1", "expected a column name"),
    ("SELECT * FROM other WHERE id = 1", "not from public.products"),
    ("color = 'x' /* */", "'/' at position 12"),
])
def test_filters_outside_the_grammar_are_refused(text, reason):
    with pytest.raises(SignalDataError, match=reason.replace("(", r"\(").replace("*", r"\*")):
        parse_filter(text, PRODUCTS, allow_select=True)


def test_file_channel_reads_complete_lines_once_across_restarts(tmp_path):
    path = tmp_path / "signals.jsonl"
    config = Config({"signal.file": str(path), "signal.poll.interval.ms": 1})
    append_signal(path, "log", {"message": "one"}, "s1")
    channel = FileSignalChannel(config)
    assert [(r.id, r.type, r.data) for r in channel.read()] == [("s1", "log", {"message": "one"})]
    channel.commit()
    with open(path, "ab") as f:
        f.write(b'{"id": "s2", "type": "log", "data": {}}\n{"id": "s3", "ty')  # a half-written line
    time.sleep(0.002)
    assert [r.id for r in channel.read()] == ["s2"]
    channel.commit()
    with open(path, "ab") as f:
        f.write(b'pe": "log"}\n')
    restarted = FileSignalChannel(config)
    assert [r.id for r in restarted.read()] == ["s3"]  # s1 and s2 are not run again
    restarted.commit()
    path.write_bytes(b'{"id": "s4", "type": "log"}\n')  # replaced by a shorter file: read from its start
    time.sleep(0.002)
    assert [r.id for r in restarted.read()] == ["s4"]


def test_sink_notification_record_has_debeziums_shape():
    records = []
    n = Notification.of("Incremental Snapshot", "STARTED", {"data_collections": "public.t"}, "ad-hoc-1")
    SinkNotificationChannel(Config({"notification.sink.topic.name": "notes"}), None).send(n, records.append)
    [r] = records
    assert r.topic == "notes" and r.key == {"id": "ad-hoc-1"} and r.offset is None
    assert list(r.value) == ["id", "type", "aggregate_type", "additional_data", "timestamp"]
    assert r.value["additional_data"] == {"data_collections": "public.t"}
    assert KEY_SCHEMA.name == "io.debezium.connector.common.NotificationKey"
    assert VALUE_SCHEMA.field("additional_data").schema.type == "map"


def _config(**extra) -> dict:
    return {"connector.class": "memory", "topic.prefix": "test", "poll.interval.ms": 10, **extra}


def test_channel_names_and_the_sink_topic_are_checked():
    plugins = memory_registry()
    script = add_script(MemoryScript([]))
    problems = connector_problems(Config(_config(**{"memory.script": script, "signal.enabled.channels": "source,jmx",
                                                    "notification.enabled.channels": "sink"})), plugins)
    assert any("no signal channel called 'jmx'" in p for p in problems)
    assert any("notification.sink.topic.name: is required" in p for p in problems)


def _signal_row(pos: int, signal_id: str, type_: str, data: str) -> RawChange:
    return RawChange(SIGNALS, "c", None, (signal_id, type_, data), source(pos), offset(pos))


def test_signal_rows_are_taken_out_of_the_stream_and_dispatched():
    """The signal table is not captured: its rows become checkpoints; signals run; unsupported ones are REJECTED."""
    script = MemoryScript([[insert(1), _signal_row(2, "l1", "log", '{"message": "hello"}'), insert(3)],
                           [_signal_row(4, "x1", "execute-snapshot", '{"data-collections": ["public.customers"]}')],
                           [_signal_row(5, "bad", "no-such-signal", "{}"), insert(6)]], keep_streaming=True)
    config = _config(**{"memory.script": add_script(script), "signal.data.collection": "public.debezium_signal",
                        "table.include.list": "public.customers", "notification.enabled.channels": "sink,log",
                        "notification.sink.topic.name": "notes"})
    engine = Engine(config, offset_store=MemoryOffsetStore(), plugins=memory_registry())
    notes, records = [], []
    engine.add_notification_listener(notes.append)
    runner = threading.Thread(target=engine.run, args=(records.extend,))
    runner.start()
    try:
        deadline = time.monotonic() + 10
        while len(notes) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        engine.signal("log", {"message": "in-process"}, "api-1")
        while len(notes) < 2 or not any(r.key == {"id": "bad"} for r in records):
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        engine.stop()
        runner.join(10)
    assert [r.topic for r in records if r.topic != "notes"] == ["test.public.customers"] * 3
    rejected = {n.id: n.additional_data["reason"] for n in notes if n.type == "REJECTED"}
    assert "does not support ad hoc snapshots" in rejected["x1"]
    assert "unknown signal type 'no-such-signal'" in rejected["bad"]
    assert [r.value["type"] for r in records if r.topic == "notes"] == ["REJECTED", "REJECTED"]
    assert script.acknowledged[-1]["pos"] == 6


def test_cdc_signal_appends_to_the_signal_file(tmp_path, capsys, restore_logging):
    config = tmp_path / "app.properties"
    config.write_text(f"connector.class=postgres\ntopic.prefix=t\nsignal.enabled.channels=source\n"
                      f"signal.file={tmp_path / 'sig.jsonl'}\n")
    assert main(["signal", str(config), "log", '{"message": "x"}']) == 2
    assert "does not include the file channel" in capsys.readouterr().err
    config.write_text(config.read_text().replace("channels=source", "channels=source,file"))
    assert main(["signal", str(config), "execute-snapshot", '{"data-collections": ["public.t"]}', "--id", "s9"]) == 0
    assert "signal s9 (execute-snapshot) appended" in capsys.readouterr().out
    line = orjson.loads((tmp_path / "sig.jsonl").read_bytes())
    assert line == {"id": "s9", "type": "execute-snapshot", "data": {"data-collections": ["public.t"]}}
    assert main(["signal", str(config), "log", "{not json"]) == 2


def _table(name: str) -> Table:
    return Table(TableId(None, "public", name), [Column("id", "int4", INT32, int)], ["id"])


class MemoryAdHocSource:
    """An in-memory ad hoc snapshot capability: three tables of ten rows; it waits at ``gate`` before table c."""

    tables = [_table("a"), _table("b"), _table("c")]

    def __init__(self, gate: threading.Event):
        self.gate = gate
        self.read: list[str] = []

    def captured_tables(self):
        return list(self.tables)

    def blocking_snapshot(self, tables, offset_for, stopped):
        for table, _ in tables:
            if table.id.table == "c":
                self.gate.wait(10)
                if stopped():
                    return
            self.read.append(table.id.table)
            yield [RawChange(table, "r", None, (str(i),), source(0), offset_for(table)) for i in range(10)]

    def close(self):
        pass


def test_a_stopped_blocking_snapshot_resumes_with_the_tables_left():
    """Stopped while reading b: the committed offset names b and c; the next run reads b and c, then streams on."""
    from memory_connector import MemoryConnector, MemoryPlugin
    from cdc_core.hookspecs import hookimpl

    gate = threading.Event()
    ad_hoc = MemoryAdHocSource(gate)

    class AdHocConnector(MemoryConnector):
        name = "memory-ad-hoc"
        class_names = ()

        def incremental_snapshot_source(self):
            return ad_hoc

    class Plugin(MemoryPlugin):
        @hookimpl
        def register_connectors(self):
            return [AdHocConnector]

    plugins = memory_registry()
    plugins.register(Plugin(), name="ad-hoc")
    script = MemoryScript([[insert(1)]], keep_streaming=True)
    config = _config(**{"connector.class": "memory-ad-hoc", "memory.script": add_script(script)})
    store = MemoryOffsetStore()
    engine = Engine(config, offset_store=store, plugins=plugins)
    records = []

    def handler(batch):
        records.extend(batch)
        if any(r.topic == "test.public.b" for r in batch):
            engine.stop()
            gate.set()

    runner = threading.Thread(target=engine.run, args=(handler,))
    runner.start()
    deadline = time.monotonic() + 10
    while not any(r.topic == "test.public.customers" for r in records):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    engine.signal("execute-snapshot", {"type": "BLOCKING", "data-collections": [r"public\.[abc]"]}, "b-1")
    runner.join(10)
    offset = store.get({"server": "test"})
    assert offset["blocking_snapshot"] == {"id": "b-1", "tables": ["public.b", "public.c"], "conditions": {}}
    assert ad_hoc.read == ["a", "b"]

    engine = Engine(config, offset_store=store, plugins=plugins)
    records = []
    runner = threading.Thread(target=engine.run, args=(records.extend,))
    runner.start()
    deadline = time.monotonic() + 10
    try:
        while "blocking_snapshot" in store.get({"server": "test"}):
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        engine.stop()
        runner.join(10)
    assert ad_hoc.read == ["a", "b", "b", "c"]
    assert [r.topic for r in records] == ["test.public.b"] * 10 + ["test.public.c"] * 10
    assert store.get({"server": "test"}) == {"pos": 1}  # back at the position streaming paused at
