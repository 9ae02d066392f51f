"""The rows the source emits: fixed columns for every event, typed ``before``/``after`` for one table."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import orjson
import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from cdc_core.events import ChangeRecord
from cdc_core.schema import Schema
from cdc_core.serializers.json import JsonSerializer
from cdc_spark.types import spark_type, struct_converter

#: The columns every row has, in order.
BASE_FIELDS = [
    T.StructField("topic", T.StringType(), False),
    T.StructField("key", T.StringType(), True),
    T.StructField("value", T.StringType(), True),
    T.StructField("op", T.StringType(), True),
    T.StructField("ts_ms", T.LongType(), True),
    T.StructField("position", T.LongType(), False),
    T.StructField("offset", T.StringType(), True),
    T.StructField("snapshot_id", T.StringType(), True),
]


class EventRow(NamedTuple):
    """One serialized event as it travels from the driver to an executor.

    ``position`` orders events within the stream (a snapshot's rows share one position);
    ``offset`` is the connector offset (JSON) after which this event is delivered;
    ``snapshot_id`` names the consistent snapshot the row belongs to (None for log events).
    """

    topic: str
    key: bytes | None
    value: bytes | None
    op: str | None
    ts_ms: int | None
    position: int
    offset: str | None
    snapshot_id: str | None


def row_schema(value_schema: Schema | None) -> T.StructType:
    """The source's Spark schema; with a table's Connect value schema, typed ``before``/``after`` too."""
    fields = list(BASE_FIELDS)
    if value_schema is not None:
        typed = spark_type(value_schema)
        fields += [T.StructField("before", typed, True), T.StructField("after", typed, True)]
    return T.StructType(fields)


def event_rows(records: Iterable[ChangeRecord], serializer: JsonSerializer, position: int,
               snapshot_id: str | None = None, offset: str | None = None) -> list[EventRow]:
    """Serialize records as EventRows at one position (``offset``: None takes each record's own)."""
    records = list(records)
    out = []
    for r, s in zip(records, serializer.serialize(records)):
        v = r.value
        out.append(EventRow(r.topic, s.key, s.value, v.get("op") if v else None, v.get("ts_ms") if v else None, position,
                            offset if offset is not None else (orjson.dumps(r.offset).decode() if r.offset else None),
                            snapshot_id))
    return out


class RowEncoder:
    """Turns EventRows into Arrow record batches of the source's schema (typed columns parsed from ``value``)."""

    def __init__(self, schema: T.StructType, value_schema: Schema | None, value_schemas_enable: bool):
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")
        self.typed = value_schema is not None
        self.value_schemas_enable = value_schemas_enable
        self._convert = struct_converter(value_schema) if value_schema is not None else None

    def batches(self, rows: Iterable[EventRow], size: int = 8192) -> Iterator[pa.RecordBatch]:
        """Record batches of at most ``size`` rows."""
        chunk: list[EventRow] = []
        for row in rows:
            chunk.append(row)
            if len(chunk) >= size:
                yield self.batch(chunk)
                chunk = []
        if chunk:
            yield self.batch(chunk)

    def batch(self, rows: list[EventRow]) -> pa.RecordBatch:
        """One record batch."""
        cols = list(zip(*rows)) if rows else [[] for _ in range(8)]
        arrays: list[Any] = list(cols)
        if self.typed:
            before, after = [], []
            convert = self._convert
            assert convert is not None
            for v in cols[2]:
                payload = None
                if v is not None:
                    payload = orjson.loads(v)
                    if self.value_schemas_enable:
                        payload = payload["payload"]
                b = payload.get("before") if payload else None
                a = payload.get("after") if payload else None
                before.append(None if b is None else convert(b))
                after.append(None if a is None else convert(a))
            arrays += [before, after]
        return pa.RecordBatch.from_arrays(
            [pa.array(col, type=f.type) for col, f in zip(arrays, self.arrow_schema)], schema=self.arrow_schema
        )
