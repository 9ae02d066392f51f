"""A seeded, replayable write workload: inserts, updates, deletes, key changes, multi-row transactions, large values."""

from __future__ import annotations

import random
import string
import threading
import time
from decimal import Decimal
from typing import Any

from kit.contract import Column, ConnectorFixture, Table

#: The kit's workload table: ``v`` takes a new, ever larger value with every write (a version).
ITEMS = Table("kit_items", (Column("id", "int32", nullable=False), Column("v", "int64", nullable=False),
                            Column("grp", "int32"), Column("txt", "text")))

_ALPHABET = string.ascii_letters + string.digits


def _insert_sql(fx: ConnectorFixture, table: Table, columns: list[str]) -> str:
    qualified = f"{fx.quote(table.schema or fx.default_schema)}.{fx.quote(table.name)}"
    return (f"INSERT INTO {qualified} ({', '.join(fx.quote(c) for c in columns)}) "
            f"VALUES ({', '.join(['%s'] * len(columns))})")


def insert_rows(fx: ConnectorFixture, table: Table, rows: list[dict[str, Any]]) -> None:
    """Insert ``rows`` (dicts by column name) in one transaction."""
    if not rows:
        return
    columns = list(rows[0])
    with fx.connect() as conn:
        cur = conn.cursor()
        cur.executemany(_insert_sql(fx, table, columns), [tuple(r[c] for c in columns) for r in rows])
        conn.commit()


def read_rows(fx: ConnectorFixture, table: Table) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The table's rows by key, values as the events carry them (decimals as ``decimal.handling.mode=string`` writes them: ``BigDecimal.toPlainString()``)."""
    names = table.column_names()
    qualified = f"{fx.quote(table.schema or fx.default_schema)}.{fx.quote(table.name)}"
    with fx.connect() as conn:
        cur = conn.cursor()
        cur.execute(f"SELECT {', '.join(fx.quote(n) for n in names)} FROM {qualified}")
        rows = cur.fetchall()
        conn.commit()
    out = {}
    for row in rows:
        values = {n: (format(v, "f") if isinstance(v, Decimal) else v) for n, v in zip(names, row)}
        out[tuple(values[k] for k in table.key)] = values
    return out


class Writer:
    """Random transactions on ``ITEMS``-shaped tables, seeded; ``v`` grows with every write.

    Each transaction holds one to five operations: an insert of a free key, an update of ``v``
    (sometimes of ``txt`` with a large value), a delete, or a key change (``UPDATE ... SET id``).
    """

    def __init__(self, fx: ConnectorFixture, table: Table = ITEMS, seed: int = 1, key_space: int = 10_000,
                 large: int = 100_000):
        self.fx, self.table, self.rng = fx, table, random.Random(seed)
        self.key_space, self.large = key_space, large
        self.keys: set[int] = set()
        self.version = 0
        self.transactions = 0
        self.max_transaction = 0
        self._qualified = f"{fx.quote(table.schema or fx.default_schema)}.{fx.quote(table.name)}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def _next_v(self) -> int:
        self.version += 1
        return self.version

    def _text(self) -> str:
        if self.rng.random() < 0.05:
            return "".join(self.rng.choices(_ALPHABET, k=self.large))  # random: beyond TOAST even compressed
        return "t" + str(self.rng.randrange(1_000_000))

    def _free_key(self) -> int:
        while True:
            key = self.rng.randrange(1, self.key_space)
            if key not in self.keys:
                return key

    def seed_rows(self, n: int, chunk: int = 1000) -> None:
        """Insert ``n`` rows in transactions of ``chunk`` rows (before the connector starts: the snapshot's data)."""
        self.key_space = max(self.key_space, 3 * (len(self.keys) + n))  # room for new keys
        for start in range(0, n, chunk):
            rows = []
            for _ in range(min(chunk, n - start)):
                key = self._free_key()
                self.keys.add(key)
                rows.append({"id": key, "v": self._next_v(), "grp": key % 7, "txt": self._text()})
            insert_rows(self.fx, self.table, rows)

    def transaction(self) -> int:
        """Run one random transaction; return how many rows it changed."""
        q = self.fx.quote
        ops = self.rng.randint(1, 5)
        changed = 0
        with self.fx.connect() as conn:
            cur = conn.cursor()
            added: set[int] = set()
            removed: set[int] = set()
            for _ in range(ops):
                live = sorted(self.keys - removed | added)
                roll = self.rng.random()
                if roll < 0.35 or len(live) < 10:
                    key = self._free_key()
                    while key in added:
                        key = self._free_key()
                    cur.execute(_insert_sql(self.fx, self.table, ["id", "v", "grp", "txt"]),
                                (key, self._next_v(), key % 7, self._text()))
                    added.add(key)
                    removed.discard(key)
                elif roll < 0.75:
                    key = self.rng.choice(live)
                    if self.rng.random() < 0.3:
                        cur.execute(f"UPDATE {self._qualified} SET {q('v')} = %s, {q('txt')} = %s WHERE {q('id')} = %s",
                                    (self._next_v(), self._text(), key))
                    else:  # leaves txt alone: an unchanged large value
                        cur.execute(f"UPDATE {self._qualified} SET {q('v')} = %s WHERE {q('id')} = %s",
                                    (self._next_v(), key))
                elif roll < 0.9:
                    key = self.rng.choice(live)
                    cur.execute(f"DELETE FROM {self._qualified} WHERE {q('id')} = %s", (key,))
                    added.discard(key)
                    removed.add(key)
                else:
                    key, new = self.rng.choice(live), self._free_key()
                    while new in added:
                        new = self._free_key()
                    cur.execute(f"UPDATE {self._qualified} SET {q('id')} = %s, {q('v')} = %s WHERE {q('id')} = %s",
                                (new, self._next_v(), key))
                    added.discard(key)
                    removed.add(key)
                    added.add(new)
                    removed.discard(new)
                changed += 1
            conn.commit()
        self.keys = (self.keys - removed) | added
        self.transactions += 1
        self.max_transaction = max(self.max_transaction, changed)
        return changed

    def run(self, transactions: int) -> None:
        """Run ``transactions`` transactions now."""
        for _ in range(transactions):
            self.transaction()

    def start(self, pause: float = 0.005, limit: int | None = None) -> Writer:
        """Write in a background thread (one transaction, then ``pause`` seconds) until ``stop()`` or ``limit``."""

        def loop() -> None:
            try:
                while not self._stop.is_set() and (limit is None or self.transactions < limit):
                    self.transaction()
                    time.sleep(pause)
            except BaseException as e:  # reported by stop()
                self.error = e

        self._stop.clear()
        self._thread = threading.Thread(target=loop, name="kit-writer", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the background writer; re-raise what it failed with."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(60)
            self._thread = None
        if self.error is not None:
            raise AssertionError(f"the kit's writer failed: {self.error!r}") from self.error
