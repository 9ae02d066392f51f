"""Events as Arrow: record batches of the source's schema, and compact Arrow IPC for driver-read rows.

Strings are built from one joined buffer (JSON from orjson is valid UTF-8), constant columns as
repeats, so a row costs a few list appends. Rows the driver read travel to executors as one
zstd-compressed Arrow IPC stream of the fixed columns with keys and values unframed (their
JsonConverter frames travel once per partition, see ``cdc_spark.framing``); executors frame them
and add the typed ``before``/``after`` columns.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import accumulate
from typing import Any

import orjson
import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from cdc_core.events import ChangeRecord
from cdc_core.schema import Schema
from cdc_spark.framing import join_frames
from cdc_spark.rows import BASE_FIELDS, EventRow
from cdc_spark.types import struct_converter

_FRAME_FIELDS = [T.StructField("key_frame", T.IntegerType(), False), T.StructField("value_frame", T.IntegerType(), False)]
#: Rows per record batch.
BATCH_ROWS = 8192
_IPC = pa.ipc.IpcWriteOptions(compression="zstd")


def _strings(values: list[bytes | None]) -> pa.Array:
    """A string array of UTF-8 bytes, built from one buffer without per-value checks."""
    if None in values:
        return pa.array(values, pa.binary()).cast(pa.string())
    offsets = pa.array(list(accumulate(map(len, values), initial=0)), pa.int32())
    return pa.StringArray.from_buffers(len(values), offsets.buffers()[1], pa.py_buffer(b"".join(values)))


def _same(value: Any, n: int, type: pa.DataType) -> pa.Array:
    """``n`` copies of ``value``."""
    return pa.repeat(pa.scalar(value, type), n) if value is not None else pa.nulls(n, type)


class RowEncoder:
    """Turns events into Arrow record batches of the source's schema (typed columns from the payloads)."""

    def __init__(self, schema: T.StructType, value_schema: Schema | None, key_schemas_enable: bool,
                 value_schemas_enable: bool):
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")
        self.wire_schema = to_arrow_schema(T.StructType([*BASE_FIELDS, *_FRAME_FIELDS]), timezone="UTC")
        self.typed = value_schema is not None
        self.key_schemas_enable = key_schemas_enable
        self.value_schemas_enable = value_schemas_enable
        self._convert = struct_converter(value_schema) if value_schema is not None else None

    # -- driver-read rows ----------------------------------------------------------------------

    def wire_batch(self, rows: list[EventRow]) -> pa.RecordBatch:
        """EventRows as they travel: the fixed columns (key and value unframed) plus the frame indexes."""
        cols = list(zip(*rows)) if rows else [[] for _ in range(10)]
        return pa.RecordBatch.from_arrays([
            pa.array(cols[0], pa.string()), _strings(list(cols[1])), _strings(list(cols[2])),
            pa.array(cols[3], pa.string()), pa.array(cols[4], pa.int64()), pa.array(cols[5], pa.int64()),
            pa.array(cols[8], pa.string()), pa.array(cols[9], pa.string()),
            pa.array(cols[6], pa.int32()), pa.array(cols[7], pa.int32()),
        ], schema=self.wire_schema)

    def ipc(self, rows: list[EventRow]) -> bytes:
        """EventRows as a compressed Arrow IPC stream of wire batches (to ship to an executor)."""
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, self.wire_schema, options=_IPC) as writer:
            for i in range(0, len(rows), BATCH_ROWS):
                writer.write_batch(self.wire_batch(rows[i : i + BATCH_ROWS]))
        return sink.getvalue().to_pybytes()

    def from_ipc(self, data: bytes, frames: list[bytes]) -> Iterator[pa.RecordBatch]:
        """Record batches of the source's schema from an ``ipc`` stream and the frames its rows name."""
        for batch in pa.ipc.open_stream(pa.py_buffer(data)):
            yield self.from_wire(batch, frames)

    def batch(self, rows: list[EventRow], frames: list[bytes]) -> pa.RecordBatch:
        """One record batch of the source's schema."""
        return self.from_wire(self.wire_batch(rows), frames)

    def from_wire(self, wire: pa.RecordBatch, frames: list[bytes]) -> pa.RecordBatch:
        """Frame the keys and values; add the typed columns (parsed from the value payloads) when wanted."""
        columns = wire.columns[:8]
        payloads = columns[2]
        if self.key_schemas_enable:
            columns[1] = join_frames(columns[1], wire.column(8), frames)
        if self.value_schemas_enable:
            columns[2] = join_frames(columns[2], wire.column(9), frames)
        if not self.typed:
            return pa.RecordBatch.from_arrays(columns, schema=self.arrow_schema)
        return self._with_typed(columns, [None if v is None else orjson.loads(v)
                                          for v in payloads.cast(pa.binary()).to_pylist()])

    # -- snapshot chunks -----------------------------------------------------------------------

    def records_batch(self, records: list[ChangeRecord], serialized: list[Any], position: int,
                      snapshot_id: str | None) -> pa.RecordBatch:
        """One record batch straight from built records and their serialized forms (a snapshot chunk's rows)."""
        n = len(records)
        texts: dict[int, str | None] = {}
        offsets = []
        for r in records:  # a chunk's rows share their offset object: serialize each one once
            o = r.offset
            k = id(o)
            if k not in texts:
                texts[k] = orjson.dumps(o).decode() if o else None
            offsets.append(texts[k])
        values = [r.value for r in records]
        topics = {r.topic for r in records}
        topic = _same(topics.pop(), n, pa.string()) if len(topics) == 1 else pa.array([r.topic for r in records], pa.string())
        columns = [
            topic, _strings([s.key for s in serialized]), _strings([s.value for s in serialized]),
            pa.array([v.get("op") if v else None for v in values], pa.string()),  # schema change events have none
            pa.array([v.get("ts_ms") if v else None for v in values], pa.int64()),
            _same(position, n, pa.int64()), pa.array(offsets, pa.string()), _same(snapshot_id, n, pa.string()),
        ]
        if self.typed:
            return self._with_typed(columns, values)
        return pa.RecordBatch.from_arrays(columns, schema=self.arrow_schema)

    def _with_typed(self, columns: list[pa.Array], payloads: list[Any]) -> pa.RecordBatch:
        convert = self._convert
        assert convert is not None
        before = [None if p is None or p.get("before") is None else convert(p["before"]) for p in payloads]
        after = [None if p is None or p.get("after") is None else convert(p["after"]) for p in payloads]
        return pa.RecordBatch.from_arrays([
            *columns, pa.array(before, self.arrow_schema.field("before").type),
            pa.array(after, self.arrow_schema.field("after").type),
        ], schema=self.arrow_schema)
