"""COPY text read in blocks: every row once, in order, escapes decoded, server errors raised."""

from __future__ import annotations

import psycopg
import pytest

from cdc_postgres.copyread import read_blocks
from cdc_postgres.copytext import parse_block, parse_row
from cdc_postgres.embedded import EmbeddedPostgres


def test_parse_block_splits_rows_and_decodes_escapes_and_nulls() -> None:
    block = b"1\tplain\t\\N\n2\ttab\\there\tline\\nbreak\n3\tback\\\\slash\t\\x41\\101\n"
    assert parse_block(block) == [
        ["1", "plain", None],
        ["2", "tab\there", "line\nbreak"],
        ["3", "back\\slash", "AA"],
    ]
    assert parse_block(b"") == []
    assert parse_block("1\tcaf\u00e9\n".encode()) == [["1", "caf\u00e9"]]


def test_parse_block_equals_parse_row_per_line() -> None:
    lines = ["10\tx\\ty\t\\N", "11\tplain\t", "12\t\\\\N\tz"]
    assert parse_block(("\n".join(lines) + "\n").encode()) == [parse_row(line) for line in lines]


def _blocks(pg: EmbeddedPostgres, db: str, query: str, max_rows: int) -> list[bytes]:
    with pg.connect(db) as conn, conn.cursor() as cur:
        with cur.copy(query) as copy:
            blocks = list(read_blocks(copy, max_rows))
        # The COPY is over and the connection usable.
        assert conn.execute("SELECT 42").fetchone() == (42,)
    return blocks


def test_read_blocks_returns_every_row_once_in_blocks_of_at_most_max_rows(pg_server: EmbeddedPostgres, pg_db: str) -> None:
    query = "COPY (SELECT g, repeat('x', g % 50), CASE WHEN g % 7 = 0 THEN NULL ELSE E'a\\tb' END " \
            "FROM generate_series(1, 20000) g) TO STDOUT"
    blocks = _blocks(pg_server, pg_db, query, 1000)
    assert all(block.endswith(b"\n") and block.count(b"\n") <= 1000 for block in blocks)
    rows = [row for block in blocks for row in parse_block(block)]
    assert [int(r[0]) for r in rows] == list(range(1, 20001))
    assert rows[6] == ["7", "x" * 7, None]
    assert rows[7] == ["8", "x" * 8, "a\tb"]


def test_read_blocks_of_an_empty_result(pg_server: EmbeddedPostgres, pg_db: str) -> None:
    assert _blocks(pg_server, pg_db, "COPY (SELECT 1 WHERE false) TO STDOUT", 100) == []


def test_read_blocks_raises_the_servers_error_and_leaves_the_connection_usable(
    pg_server: EmbeddedPostgres, pg_db: str
) -> None:
    query = "COPY (SELECT 1 / (g - 15000) FROM generate_series(1, 20000) g) TO STDOUT"
    with pg_server.connect(pg_db) as conn, conn.cursor() as cur:
        with pytest.raises(psycopg.errors.DivisionByZero):
            with cur.copy(query) as copy:
                for _ in read_blocks(copy, 500):
                    pass
        conn.rollback()
        assert conn.execute("SELECT 42").fetchone() == (42,)


def test_stopping_early_cancels_the_copy(pg_server: EmbeddedPostgres, pg_db: str) -> None:
    query = "COPY (SELECT g FROM generate_series(1, 2000000) g) TO STDOUT"
    with pg_server.connect(pg_db) as conn, conn.cursor() as cur:
        with pytest.raises(KeyError):
            with cur.copy(query) as copy:
                for _ in read_blocks(copy, 100):
                    raise KeyError("stop")
        conn.rollback()
        assert conn.execute("SELECT 42").fetchone() == (42,)
