"""Snapshot workers' record blocks: the lines the file sink writes, the records any other sink gets, batches split."""

from __future__ import annotations

import pytest

from cdc_core.config import Config
from cdc_core.queue import BatchQueue
from cdc_core.record_block import RecordBlock, can_write, count, expand, write_lines
from cdc_core.sinks.file import FileSink
from cdc_core.sinks.lines import record_line
from cdc_core.spi.sink import SinkRecord

pytestmark = pytest.mark.skipif(not can_write(), reason="needs memfd_create and writev (Linux)")


def _records(n: int, keyless: bool = False) -> list[SinkRecord]:
    return [SinkRecord("db.public.t", None if keyless else b'{"id":%d}' % i, b'{"v":"x%d\\n"}' % i, {})
            for i in range(n)]


def _block(records: list[SinkRecord]) -> RecordBlock:
    layout, fd = write_lines(records)
    return layout.open(fd)


@pytest.mark.parametrize("keyless", [False, True])
def test_block_gives_back_the_records_and_their_lines(keyless):
    records = _records(3000, keyless)
    block = _block(records)
    assert len(block) == 3000
    assert block.records() == records
    assert block.lines() == b"".join(map(record_line, records))


def test_records_that_do_not_fit_a_block_are_refused():
    records = _records(3)
    assert write_lines(records[:1] + [records[1]._replace(topic="other")]) is None
    assert write_lines([records[0]._replace(headers={"h": "1"})]) is None
    assert write_lines([records[0]._replace(value=None)]) is None


def test_queue_counts_a_block_as_its_records_and_splits_it_at_the_batch_size():
    records = _records(5000)
    queue: BatchQueue = BatchQueue(8192)
    marker = SinkRecord("x", None, b"1", None)
    items = [marker, _block(records), marker]
    assert queue.put(items, weight=count(items))
    assert len(queue) == 5002
    batches = []
    while len(queue):
        batches.append(queue.get(2048, 0.1))
    assert [count(b) for b in batches] == [2048, 2048, 906]
    assert expand([r for b in batches for r in b]) == [marker, *records, marker]


def test_queue_bounded_in_bytes_measures_a_block_by_its_lines():
    records = _records(100)
    block = _block(records)
    queue: BatchQueue = BatchQueue(8192, 10_000_000, lambda r: r.nbytes if r.__class__ is RecordBlock else 1)
    queue.put([block], weight=100)
    assert queue.current_bytes == block.nbytes
    head = queue.get(40, 0.1)
    assert queue.current_bytes == block.nbytes - head[0].nbytes
    queue.get(100, 0.1)
    assert queue.current_bytes == 0 and len(queue) == 0


def test_file_sink_writes_a_block_between_records_in_order(tmp_path):
    records = _records(500)
    sink = FileSink(Config({"dir": str(tmp_path)}))
    head, tail = _block(records[1:]).split(200)
    sink.write([records[0], head, tail])
    sink.close()
    assert (tmp_path / "db.public.t.jsonl").read_bytes() == b"".join(map(record_line, records))




def _changes(n: int, keyless: bool = False):
    from cdc_core.events import ChangeRecord
    from cdc_core.schema import Schema, struct

    key_schema = None if keyless else struct("k", [("id", Schema("int32"))])
    value_schema = struct("v", [("id", Schema("int32")), ("name", Schema("string", optional=True, default="d"))])
    return [ChangeRecord("db.public.t", None if keyless else {"id": i}, {"id": i, "name": None if i % 2 else f"n{i}"},
                         key_schema, value_schema) for i in range(n)]


@pytest.mark.parametrize("keyless", [False, True])
def test_json_with_schemas_written_straight_into_a_block_as_serialize_writes_it(keyless):
    from cdc_core.record_block import write_changes
    from cdc_core.serializers.json import JsonSerializer

    serializer = JsonSerializer()
    layout, fd = write_changes(serializer, _changes(500, keyless))
    block = layout.open(fd)
    assert block.records() == serializer.serialize(_changes(500, keyless))
    assert block.lines() == b"".join(map(record_line, serializer.serialize(_changes(500, keyless))))


def test_what_a_block_cannot_hold_is_serialized_as_records():
    from cdc_core.record_block import write_changes
    from cdc_core.serializers.json import JsonSerializer

    changes = _changes(3)
    changes[1].headers = {"h": "1"}
    assert write_changes(JsonSerializer(), changes) is None
    assert write_changes(JsonSerializer(value_schemas_enable=False), _changes(3)) is None
