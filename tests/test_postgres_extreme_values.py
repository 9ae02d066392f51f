"""Values at PostgreSQL's limits, snapshot and streaming, as Debezium 2.7 writes them (recorded from Debezium 3.0.7).

A 5000-digit NUMERIC (beyond Python's int() digit limit), a timestamp of 294276 AD (Debezium's
TimeUnit.SECONDS.toMicros saturates, then the fraction wraps around the long), 178000000 years
of interval (Java's (long) cast of the double saturates) and the same number as a double
(BigDecimal.doubleValue() is Infinity). None of them may stop the connector.
"""

from __future__ import annotations

import base64

import pytest

from cdc_core.stores.memory_offsets import MemoryOffsetStore
from test_postgres_relation_types import _Run

SETUP = ("CREATE TABLE w (id int PRIMARY KEY, n numeric, ts timestamp, tz timestamptz, iv interval);"
         "INSERT INTO w VALUES (1, {values})")
VALUES = ("(repeat('9', 5000) || '.' || repeat('1', 100))::numeric, '294276-12-31 23:59:59.999999', "
          "'294276-12-31 23:59:59.999999+00', '178000000 years'")


def _unscaled_base64() -> str:
    from decimal import Decimal

    n = int(Decimal("9" * 5000 + "1" * 100))
    return base64.b64encode(n.to_bytes(n.bit_length() // 8 + 1, "big", signed=True)).decode()


@pytest.mark.parametrize(("properties", "number"), [
    ({}, "variable-scale"),
    ({"decimal.handling.mode": "double"}, "Infinity"),
])
def test_values_at_the_limits_convert_as_debezium_does(pg_server, pg_db, properties, number):
    pg_server.execute(SETUP.format(values=VALUES), dbname=pg_db)
    run = _Run(pg_server, pg_db, MemoryOffsetStore(), **properties)
    try:
        run.wait(1, "rel.public.w")
        pg_server.execute(f"INSERT INTO w VALUES (2, {VALUES})", dbname=pg_db)
        records = run.wait(2, "rel.public.w")
    finally:
        run.stop()
    expected_n = {"scale": 100, "value": _unscaled_base64()} if number == "variable-scale" else number
    for record in records:
        after = record.value["after"]
        assert after["n"] == expected_n
        assert after["ts"] == -9223372036853775810   # Long.MAX_VALUE + 999999, wrapped
        assert after["tz"] == "+294276-12-31T23:59:59.999999Z"
        assert after["iv"] == 2**63 - 1
