"""Java's HashSet iteration order, where Debezium's output depends on it (``source.table`` of multi-table DDL).

BinlogSourceInfo keeps the tables of the current statement in a ``HashSet<TableId>`` and writes
``source.table`` as their names joined in its iteration order. A TableId hashes as its
``catalog.table`` string; a small HashSet has 16 buckets, iterated in bucket order.
"""

from __future__ import annotations

from collections.abc import Iterable

from cdc_mysql.model import TableId


def _java_string_hash(text: str) -> int:
    h = 0
    for unit in text.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h


def _bucket(table: TableId, capacity: int) -> int:
    h = _java_string_hash(f"{table.database}.{table.table}")
    return (h ^ (h >> 16)) & (capacity - 1)


def hash_set_order(tables: Iterable[TableId]) -> list[TableId]:
    """``tables`` (distinct, in insertion order) in the order a ``new HashSet<>(them)`` iterates them."""
    unique = list(dict.fromkeys(tables))
    # BinlogSourceInfo copies the set: new HashSet<>(c) sizes its map for max(size / .75 + 1, 16).
    wanted = max(int(len(unique) / 0.75) + 1, 16)
    capacity = 1 << (wanted - 1).bit_length()
    return sorted(unique, key=lambda t: _bucket(t, capacity))  # stable: insertion order within a bucket


def source_table(tables: Iterable[TableId]) -> str | None:
    """Debezium's ``source.table`` for a statement touching ``tables``: names joined in HashSet order (None if none)."""
    ordered = hash_set_order(tables)
    return ",".join(t.table for t in ordered) if ordered else None
