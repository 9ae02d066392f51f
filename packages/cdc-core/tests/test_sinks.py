"""The file and stdout sinks: one JSON line per record with the key and value embedded as serialized."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest

from memory_connector import SOURCE_SCHEMA, insert

from cdc_core.config import Config
from cdc_core.envelope import EventBuilder
from cdc_core.errors import ConfigError, SinkError
from cdc_core.serializers.json import JsonSerializer
from cdc_core.sinks.file import FileSink
from cdc_core.sinks.stdout import StdoutSink
from cdc_core.spi.sink import SinkRecord

BATCH = [
    SinkRecord("db.public.a", b'{"id":1}', b'{"op":"c"}', {}),
    SinkRecord("db.public.b", b'{"id":2}', b'{"op":"u"}', {"__debezium.oldkey": {"id": 1}}),
    SinkRecord("db.public.a", b'{"id":1}', None, {}),
    SinkRecord("db.public.a", None, b'{"op":"d"}', {}),
]


def test_file_sink_writes_one_jsonl_file_per_topic(tmp_path: Path) -> None:
    sink = FileSink(Config({"dir": str(tmp_path / "out"), "fsync": "false"}))
    sink.write(BATCH)
    sink.close()
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["db.public.a.jsonl", "db.public.b.jsonl"]
    assert (out / "db.public.a.jsonl").read_bytes() == (
        b'{"topic":"db.public.a","key":{"id":1},"value":{"op":"c"},"headers":{}}\n'
        b'{"topic":"db.public.a","key":{"id":1},"value":null,"headers":{}}\n'
        b'{"topic":"db.public.a","key":null,"value":{"op":"d"},"headers":{}}\n'
    )
    assert (out / "db.public.b.jsonl").read_bytes() == (
        b'{"topic":"db.public.b","key":{"id":2},"value":{"op":"u"},"headers":{"__debezium.oldkey":{"id":1}}}\n'
    )


def test_file_sink_appends_across_runs(tmp_path: Path) -> None:
    for n in (1, 2):
        sink = FileSink(Config({"dir": str(tmp_path)}))
        sink.write([SinkRecord("t", str(n).encode(), None, {})])
        sink.close()
    assert (tmp_path / "t.jsonl").read_bytes() == (
        b'{"topic":"t","key":1,"value":null,"headers":{}}\n{"topic":"t","key":2,"value":null,"headers":{}}\n'
    )


def test_file_sink_lines_carry_serialized_events(tmp_path: Path) -> None:
    builder = EventBuilder(Config({"topic.prefix": "dbserver1"}), SOURCE_SCHEMA, {"server": "dbserver1"})
    records = builder.build([insert(1, name="Anne", email="a@x")])
    sink = FileSink(Config({"dir": str(tmp_path)}))
    sink.write(JsonSerializer().serialize(records))
    sink.close()
    [line] = (tmp_path / "dbserver1.public.customers.jsonl").read_bytes().splitlines()
    doc = orjson.loads(line)
    assert list(doc) == ["topic", "key", "value", "headers"]
    assert doc["topic"] == "dbserver1.public.customers"
    assert doc["key"] == {"schema": records[0].key_schema.to_json(), "payload": {"id": 1}}
    assert doc["value"]["payload"]["after"] == {"id": 1, "name": "Anne", "email": "a@x"}
    assert doc["value"]["schema"]["name"] == "dbserver1.public.customers.Envelope"


@pytest.mark.parametrize("topic", ["a/b", "..", "."])
def test_file_sink_refuses_topics_that_are_not_file_names(tmp_path: Path, topic: str) -> None:
    sink = FileSink(Config({"dir": str(tmp_path / "out")}))
    with pytest.raises(SinkError, match="cannot be used as a file name"):
        sink.write([SinkRecord(topic, None, b"1", {})])
    sink.close()
    assert list((tmp_path / "out").iterdir()) == []


def test_file_sink_needs_a_directory() -> None:
    with pytest.raises(ConfigError) as err:
        FileSink(Config({}))
    assert err.value.problems == ["dir: is required and has no value"]


def test_file_sink_reports_a_directory_it_cannot_create(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(SinkError, match="file sink: cannot create directory"):
        FileSink(Config({"dir": str(tmp_path / "file" / "out")}))


def test_stdout_sink_writes_lines_to_its_stream() -> None:
    stream = io.BytesIO()
    sink = StdoutSink(Config({}), stream=stream)
    sink.write(BATCH[:2])
    sink.write([])
    sink.write(BATCH[2:3])
    sink.close()
    assert stream.getvalue().splitlines() == [
        b'{"topic":"db.public.a","key":{"id":1},"value":{"op":"c"},"headers":{}}',
        b'{"topic":"db.public.b","key":{"id":2},"value":{"op":"u"},"headers":{"__debezium.oldkey":{"id":1}}}',
        b'{"topic":"db.public.a","key":{"id":1},"value":null,"headers":{}}',
    ]


def test_stdout_sink_on_a_closed_stream_is_a_sink_error() -> None:
    stream = io.BytesIO()
    sink = StdoutSink(stream=stream)
    stream.close()
    with pytest.raises(SinkError, match="stdout sink: cannot write"):
        sink.write(BATCH[:1])
    sink.close()  # closing never raises

