"""Driver-read rows as they travel (payloads, frames, compressed IPC) come out as JsonSerializer writes them."""

from __future__ import annotations

import pyarrow as pa
import pytest

from cdc_core.events import ChangeRecord
from cdc_core.schema import primitive, struct
from cdc_core.serializers.json import JsonSerializer
from cdc_spark.encoding import RowEncoder
from cdc_spark.framing import Framer
from cdc_spark.rows import row_schema

KEY = struct("t.Key", [("id", primitive("int32"))])
ROW = struct("t.Value", [("id", primitive("int32")), ("name", primitive("string", optional=True))], optional=True)
VALUE = struct("t.Envelope", [("before", ROW), ("after", ROW), ("op", primitive("string"))])


def _records() -> list[ChangeRecord]:
    def rec(key, value, key_schema=KEY, value_schema=VALUE) -> ChangeRecord:
        return ChangeRecord("t", key, value, key_schema, value_schema, None, {}, {})

    return [
        rec({"id": 1}, {"before": None, "after": {"id": 1, "name": "a"}, "op": "c"}),
        rec({"id": 2}, {"before": {"id": 2, "name": None}, "after": None, "op": "d"}),
        rec({"id": 2}, None, value_schema=None),  # the delete's tombstone
        rec(None, {"before": None, "after": {"id": 3, "name": "é"}, "op": "c"}, key_schema=None),  # no key
        rec({"id": 4}, {"ts_ms": 1}, value_schema=None),  # a schemaless value (e.g. a heartbeat's)
    ]


@pytest.mark.parametrize("keys_on, values_on", [(True, True), (False, True), (True, False), (False, False)])
def test_framed_rows_equal_the_serializer(keys_on, values_on):
    records = _records()
    expected = JsonSerializer(keys_on, values_on).serialize(records)
    framer = Framer()
    rows = []
    for i, r in enumerate(records):
        kf, k = framer.split(r.key_schema, r.key, keys_on)
        vf, v = framer.split(r.value_schema, r.value, values_on)
        rows.append(("t", k, v, None, None, i, kf, vf, None, None))
    encoder = RowEncoder(row_schema(ROW), ROW, keys_on, values_on)
    batches = list(encoder.from_ipc(encoder.ipc(rows), framer.frames))
    table = pa.Table.from_batches(batches)
    assert table.schema == encoder.arrow_schema
    assert table["key"].to_pylist() == [None if s.key is None else s.key.decode() for s in expected]
    assert table["value"].to_pylist() == [None if s.value is None else s.value.decode() for s in expected]
    assert table["after"].to_pylist()[0] == {"id": 1, "name": "a"}
    assert table["before"].to_pylist()[1] == {"id": 2, "name": None}
    assert table["after"].to_pylist()[2] is None


@pytest.mark.parametrize("replace", [True, False])
def test_framed_payloads_apply_replace_null_with_default_as_the_serializer(replace):
    """The stream's framing writes a NULL column with a default as JsonSerializer does (per the option)."""
    row = struct("d.Value", [("id", primitive("int32")), ("label", primitive("string", optional=True, default="none"))],
                 optional=True)
    envelope = struct("d.Envelope", [("before", row), ("after", row), ("op", primitive("string"))])
    record = ChangeRecord("d", {"id": 1}, {"before": None, "after": {"id": 1, "label": None}, "op": "c"}, KEY, envelope,
                          None, {}, {})
    [expected] = JsonSerializer(value_replace_null_with_default=replace).serialize([record])
    framer = Framer()
    frame, payload = framer.split(envelope, record.value, True, replace)
    assert framer.frames[frame] + payload + b"}" == expected.value
    assert (b'"label":"none"' in payload) is replace


def test_the_suite_checks_framed_records():
    """With the test suite's CDC_CHECK_JSON, a framed record JsonConverter could not read fails."""
    with pytest.raises(AssertionError, match="is not an int32"):
        Framer().split(KEY, {"id": "one"}, True)
