"""Unchanged TOASTed values in an update: the placeholder in the form Debezium writes for each type.

Debezium 2.7.4's UnchangedToastedPlaceholder gives the placeholder's text to string columns, its
bytes to bytea (bytes mode), ``{"<ph>":"<ph>"}`` to hstore (JSON text or map), ``["<ph>"]`` to
text/varchar/json arrays, the bytes as numbers to int4/int8/date arrays and a name-based UUID to
uuid arrays; other types end up null. ``unavailable.value.placeholder`` may be ``hex:<octets>``.
The expected values below were recorded from Debezium 3.0.7 (same code) on this workload.
"""

from __future__ import annotations

import pytest

from cdc_core.stores.memory_offsets import MemoryOffsetStore
from test_postgres_relation_types import _Run

SETUP = """
CREATE EXTENSION IF NOT EXISTS hstore;
CREATE TABLE t (id int PRIMARY KEY, n int, a text, c jsonb, d bytea, e hstore, f text[], g int[], h bigint[],
                i date[], j uuid[], l bytea[], m xml, o int2[], p varbit, r timestamp[]);
ALTER TABLE t ALTER a SET STORAGE EXTERNAL, ALTER c SET STORAGE EXTERNAL, ALTER d SET STORAGE EXTERNAL,
  ALTER e SET STORAGE EXTERNAL, ALTER f SET STORAGE EXTERNAL, ALTER g SET STORAGE EXTERNAL,
  ALTER h SET STORAGE EXTERNAL, ALTER i SET STORAGE EXTERNAL, ALTER j SET STORAGE EXTERNAL,
  ALTER l SET STORAGE EXTERNAL, ALTER m SET STORAGE EXTERNAL, ALTER o SET STORAGE EXTERNAL,
  ALTER p SET STORAGE EXTERNAL, ALTER r SET STORAGE EXTERNAL;
"""
INSERT = """
INSERT INTO t SELECT 1, 0, repeat('a', 3000), jsonb_build_object('k', repeat('c', 3000)),
  convert_to(repeat('d', 3000), 'UTF8'), hstore('k', repeat('e', 3000)), ARRAY[repeat('f', 3000)],
  (SELECT array_agg(x) FROM generate_series(1, 1000) x), (SELECT array_agg(x::bigint) FROM generate_series(1, 1000) x),
  (SELECT array_agg(DATE '2000-01-01' + x) FROM generate_series(1, 1000) x),
  (SELECT array_agg(gen_random_uuid()) FROM generate_series(1, 200) x), ARRAY[convert_to(repeat('l', 3000), 'UTF8')],
  ('<a>' || repeat('m', 3000) || '</a>')::xml, (SELECT array_agg(x::int2) FROM generate_series(1, 1500) x),
  (repeat('1', 30000))::varbit, (SELECT array_agg(TIMESTAMP '2000-01-01' + x * interval '1 day') FROM generate_series(1, 1000) x)
"""
PH = "__debezium_unavailable_value"
PH_BYTES = [ord(c) for c in PH]
PH_B64 = "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="

CASES = {
    "defaults": ({}, {
        "a": PH, "c": PH, "d": PH_B64, "e": '{"%s":"%s"}' % (PH, PH), "f": [PH], "g": PH_BYTES, "h": PH_BYTES,
        "i": PH_BYTES, "j": ["b68a35a7-17ad-35b3-af2a-ae46edb4545a"], "l": [PH_B64], "m": PH, "o": None, "p": None,
        "r": None,
    }),
    "hex-placeholder-map-base64": ({"unavailable.value.placeholder": "hex:41e2", "hstore.handling.mode": "map",
                                    "binary.handling.mode": "base64"}, {
        # 0x41 0xE2 is "A" and a broken UTF-8 sequence: new String(bytes) makes it U+FFFD.
        "a": "A\ufffd", "c": "A\ufffd", "d": None, "e": {"A\ufffd": "A\ufffd"}, "f": ["A\ufffd"], "g": [65, -30],
        "h": [65, -30], "i": [65, -30], "j": ["493a8ed2-d795-36fd-a082-10b0e0833533"], "l": None, "m": "A\ufffd",
        "o": None, "p": None, "r": None,
    }),
    "hex-binary-connect": ({"binary.handling.mode": "hex", "time.precision.mode": "connect"}, {
        "a": PH, "c": PH, "d": PH, "e": '{"%s":"%s"}' % (PH, PH), "f": [PH], "g": PH_BYTES, "h": PH_BYTES,
        "i": None, "j": ["b68a35a7-17ad-35b3-af2a-ae46edb4545a"], "l": None, "m": PH, "o": None, "p": None,
        "r": None,
    }),
}


@pytest.mark.parametrize("case", list(CASES))
def test_unchanged_toasted_values_get_debeziums_placeholder_per_type(pg_server, pg_db, case):
    properties, expected = CASES[case]
    pg_server.execute(SETUP, dbname=pg_db)
    run = _Run(pg_server, pg_db, MemoryOffsetStore(), **properties)
    try:
        run.wait_slot(pg_server, pg_db)
        pg_server.execute(INSERT, dbname=pg_db)
        pg_server.execute("UPDATE t SET n = 1 WHERE id = 1", dbname=pg_db)
        records = run.wait(2, "rel.public.t")
    finally:
        run.stop()
    after = records[1].value["after"]
    assert records[1].value["op"] == "u"
    assert {k: after[k] for k in expected} == expected


def test_a_placeholder_hex_prefix_without_octets_is_refused():
    from cdc_core.config import Config
    from cdc_core.errors import ConfigError
    from cdc_postgres.modes import unavailable_placeholder

    assert unavailable_placeholder(Config({"unavailable.value.placeholder": "hex:00ff"})) == b"\x00\xff"
    with pytest.raises(ConfigError, match="unavailable.value.placeholder.*hexadecimal"):
        unavailable_placeholder(Config({"unavailable.value.placeholder": "hex:zz"}))
