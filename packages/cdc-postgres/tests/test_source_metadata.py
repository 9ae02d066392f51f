"""Source type names, lengths and scales as Debezium 2.7 reports them (values recorded from Debezium 3.0.7)."""

from __future__ import annotations

import pytest

from cdc_postgres.source_metadata import UNKNOWN_LENGTH, source_length_scale, source_type_name

U = UNKNOWN_LENGTH


def _numeric(p: int, s: int) -> int:
    return ((p << 16) | (s & 0x7FF)) + 4


@pytest.mark.parametrize(("base", "typmod", "array", "catalog", "relation"), [
    ("int4", -1, False, (10, 0), (10, 0)),
    ("int2", -1, False, (5, 0), (5, 0)),
    ("int8", -1, False, (19, 0), (19, 0)),
    ("oid", -1, False, (10, 0), (10, 0)),
    ("float4", -1, False, (8, 8), (8, 8)),
    ("float8", -1, False, (17, 17), (17, 17)),
    ("bool", -1, False, (1, 0), (1, 0)),
    ("text", -1, False, (U, 0), (U, 0)),
    ("varchar", 24, False, (20, 0), (20, 0)),
    ("bpchar", 5, False, (1, 0), (1, 0)),
    ("numeric", -1, False, (0, None), (131089, 0)),   # the two readers of Debezium disagree here
    ("numeric", _numeric(10, 2), False, (10, 2), (10, 2)),
    ("numeric", -1, True, (131089, 0), (131089, 0)),   # numeric[]: java.sql.Types.ARRAY
    ("date", -1, False, (13, 0), (13, 0)),
    ("time", 0, False, (8, 0), (8, 0)),
    ("time", 3, False, (12, 3), (12, 3)),
    ("time", -1, False, (15, 6), (15, 6)),
    ("timetz", -1, False, (21, 6), (21, 6)),
    ("timestamp", 0, False, (22, 0), (22, 0)),
    ("timestamp", -1, False, (29, 6), (29, 6)),
    ("timestamptz", 3, False, (32, 3), (32, 3)),
    ("timestamptz", -1, False, (35, 6), (35, 6)),
    ("interval", -1, False, (49, 6), (49, 6)),
    ("bit", 3, False, (3, 0), (3, 0)),
    ("varbit", -1, False, (U, 0), (U, 0)),
    ("hstore", -1, False, (U, 0), (U, 0)),
    ("int4", -1, True, (10, 0), (10, 0)),
])
def test_catalog_and_relation_sizes(base, typmod, array, catalog, relation):
    assert source_length_scale(base, typmod, None, array, relation=False) == catalog
    assert source_length_scale(base, typmod, None, array, relation=True) == relation


def test_domains_take_the_nearest_modifier_of_their_base():
    assert source_length_scale("numeric", -1, _numeric(10, 2), False, relation=False) == (10, 2)
    assert source_length_scale("varchar", -1, 24, False, relation=True) == (20, 0)
    assert source_length_scale("timestamp", -1, 3, False, relation=False) == (26, 3)
    assert source_length_scale("int4", -1, -1, True, relation=False) == (10, 0)


def test_serial_names_only_from_the_catalog():
    assert source_type_name("int4", "nextval('t_id_seq'::regclass)", relation=False) == "serial"
    assert source_type_name("int8", "nextval('s'::regclass)", relation=False) == "bigserial"
    assert source_type_name("int2", "nextval('s'::regclass)", relation=False) == "smallserial"
    assert source_type_name("int4", "nextval('t_id_seq'::regclass)", relation=True) == "int4"
    assert source_type_name("numeric", "nextval('s'::regclass)", relation=False) == "numeric"
