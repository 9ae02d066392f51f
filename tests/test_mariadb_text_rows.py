"""Snapshot rows parsed from the packets of an unbuffered result (``cdc_mysql.text_rows``) equal PyMySQL's rows parsed.

The same SELECT of a real MariaDB is read both ways: ``parsed_rows`` over an ``SSCursor`` and
``row_parser`` over PyMySQL's buffered rows. Covered: values around the text protocol's length
prefixes (250, 251, 65,535, 65,536 and 70,000 bytes), NULLs, empty strings, non-ASCII text, binary
data, a result whose columns come in another order than the table's and without some of them (a
``snapshot.select.statement.overrides`` SELECT), fetches ending anywhere, and the end of the result.
"""

from __future__ import annotations

import pymysql
import pymysql.cursors

from cdc_mysql.catalog import Catalog
from cdc_mysql.connection import Connection
from cdc_mysql.ddl import SchemaModel
from cdc_mysql.model import TableId
from cdc_mysql.snapshot import ENCODERS_ONLY, row_parser
from cdc_mysql.text_rows import _long_value, parsed_rows


def _connect(server, db: str) -> pymysql.connections.Connection:
    return Connection(host=server.host, port=server.port, user=server.user, password=server.password or "",
                      database=db, conv=ENCODERS_ONLY, charset="utf8mb4")


def _definition(server, db: str, table: str):
    with _connect(server, db) as conn:
        return Catalog(conn).read_table(SchemaModel(), TableId(db, table)).table


def _both(server, db: str, definition, select: str, fetch: int) -> tuple[list, list]:
    with _connect(server, db) as conn:
        with conn.cursor(pymysql.cursors.Cursor) as cur:
            cur.execute(select)
            parse = row_parser(definition, [d[0] for d in cur.description])
            expected = [parse(r) for r in cur.fetchall()]
        got = []
        with conn.cursor(pymysql.cursors.SSCursor) as cur:
            cur.execute(select)
            rows = parsed_rows(cur, definition)
            while chunk := rows(fetch):
                assert len(chunk) <= fetch
                got += chunk
            assert rows(fetch) == []  # past the end: nothing more, and the connection is usable again
        assert conn.cursor().execute("SELECT 1") == 1
    return got, expected


def test_packet_rows_equal_pymysqls(mariadb_server, mariadb_db):
    db = mariadb_db
    mariadb_server.execute("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20), body MEDIUMTEXT, data MEDIUMBLOB, "
                           "amount DECIMAL(12,3), ratio DOUBLE, f FLOAT, at DATETIME(6), ts TIMESTAMP(3) NULL, "
                           "d DATE, tm TIME(2), b BIT(10), flag TINYINT(1)) CHARACTER SET utf8mb4", database=db)
    lengths = [0, 1, 250, 251, 252, 300, 65535, 65536, 70000]
    for i, n in enumerate(lengths, 1):
        mariadb_server.execute(
            f"INSERT INTO t VALUES ({i}, 'ñame-{i}', REPEAT('é', {n}), REPEAT(0xFF, {n}), {i}.125, {i} / 3, {i} / 7, "
            f"'2024-01-0{i} 10:11:12.{i:06d}', '2024-02-0{i} 01:02:03.{i}', '2024-03-0{i}', '-1{i}:02:03.5', b'{i:010b}', "
            f"{i % 2})", database=db)
    mariadb_server.execute("INSERT INTO t (id) VALUES (100)", database=db)  # NULL in every other column
    definition = _definition(mariadb_server, db, "t")
    for select in ("SELECT * FROM t ORDER BY id", "SELECT flag, body, id, ts FROM t ORDER BY id"):
        for fetch in (1, 4, 1000):
            got, expected = _both(mariadb_server, db, definition, select, fetch)
            assert len(got) == len(lengths) + 1
            assert got == expected
    got, _ = _both(mariadb_server, db, definition, "SELECT flag, body, id FROM t ORDER BY id", 1000)
    assert got[2][2] == "é" * 250 and got[-1][0] == 100 and got[0][3] is None  # in the table's order; data left out


def test_long_length_prefixes():
    assert _long_value(b"\xfb", 0) == (None, 1)
    assert _long_value(b"\xfc\x03\x00abcd", 0) == (b"abc", 6)
    assert _long_value(b"x\xfd\x02\x00\x00ab", 1) == (b"ab", 7)
    assert _long_value(b"\xfe" + (1).to_bytes(8, "little") + b"z", 0) == (b"z", 10)
