"""Java HashSet order of table ids, as Debezium's source.table of multi-table DDL shows it."""

from __future__ import annotations

from cdc_mysql.java_order import hash_set_order, source_table
from cdc_mysql.model import TableId


def test_order_debezium_wrote():
    """``RENAME TABLE t3 TO t4, t1 TO t5`` in database ``probe``: Debezium 3.0.7 wrote ``t5,t4`` on both events."""
    assert source_table([TableId("probe", "t4"), TableId("probe", "t5")]) == "t5,t4"
    assert source_table([TableId("probe", "t5"), TableId("probe", "t4")]) == "t5,t4"


def test_buckets_grow_as_the_copy_constructor_sizes_them():
    """Twelve tables: new HashSet<>(c) makes 32 buckets (12 / .75 + 1 = 17), and every table stays."""
    tables = [TableId("db", f"t{i}") for i in range(12)]
    assert sorted(hash_set_order(tables)) == sorted(tables)
    assert source_table([]) is None
