"""The rows the source emits: fixed columns for every event, typed ``before``/``after`` for one table."""

from __future__ import annotations

from typing import NamedTuple

from pyspark.sql import types as T

from cdc_core.schema import Schema
from cdc_spark.types import spark_type

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
    """One event the driver read (the feed buffers plain tuples in this layout).

    ``key``/``value`` are the serialized payloads and ``key_frame``/``value_frame`` index the
    JsonConverter frame that wraps them (``cdc_spark.framing``; executors put the two together);
    ``position`` orders events within the stream; ``offset`` is the connector offset (JSON) after
    which this event is delivered; ``snapshot_id`` names the consistent snapshot the row belongs to
    (None for log events).
    """

    topic: str
    key: bytes | None
    value: bytes | None
    op: str | None
    ts_ms: int | None
    position: int
    key_frame: int
    value_frame: int
    offset: str | None
    snapshot_id: str | None


def row_schema(value_schema: Schema | None) -> T.StructType:
    """The source's Spark schema; with a table's Connect value schema, typed ``before``/``after`` too."""
    fields = list(BASE_FIELDS)
    if value_schema is not None:
        typed = spark_type(value_schema)
        fields += [T.StructField("before", typed, True), T.StructField("after", typed, True)]
    return T.StructType(fields)
