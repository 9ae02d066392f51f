"""``snapshot.max.threads`` into a sink on MariaDB: snapshot chunks read and serialized in worker processes.

Each worker takes over a connection whose consistent snapshot started under the global read lock, so
the file holds what one process writes (the same bytes, apart from times), each row once under a
concurrent writer, and streaming takes over exactly at the snapshot's binlog position.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import orjson

from cdc_core.config import Config
from cdc_core.engine import Engine
from cdc_core.sinks.file import FileSink
from cdc_core.stores.memory_history import MemorySchemaHistoryStore
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_mysql import process_snapshot
from kit.replay import rebuild_rows
from kit.writer_then_streaming import run_with_writer
from mariadb_cdc import connector_config

_TIMES = re.compile(rb'"ts_(ms|us|ns)":\d+')


def _lines(directory: Path) -> list[bytes]:
    return [line for f in sorted(directory.glob("*.jsonl")) for line in f.read_bytes().split(b"\n") if line]


def _engine(server, db, directory: Path, **more) -> Engine:
    return Engine(connector_config(server, db, **more), sink=FileSink(Config({"dir": str(directory)})),
                  offset_store=MemoryOffsetStore(), history_store=MemorySchemaHistoryStore())


def test_same_bytes_as_one_process(mariadb_server, mariadb_db, tmp_path, monkeypatch):
    monkeypatch.setattr(process_snapshot, "CHUNK_ROWS", 700)
    mariadb_server.execute([
        "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(40), amount DECIMAL(12,2), at TIMESTAMP(6) NULL, "
        "b VARBINARY(8))",
        "INSERT INTO t SELECT seq, IF(seq % 7 = 0, NULL, CONCAT('a\\\\b\\t\"é', seq)), seq * 1.25, "
        "TIMESTAMP '2024-01-01 00:00:00' + INTERVAL seq SECOND, UNHEX(HEX(seq)) FROM seq_1_to_12000",
        "DELETE FROM t WHERE id BETWEEN 3000 AND 4500",  # empty key ranges: empty chunks
        "CREATE TABLE small (id INT PRIMARY KEY, v TEXT)", "INSERT INTO small VALUES (1, 'one')",
        "ANALYZE TABLE t"], database=mariadb_db)
    out = {}
    for threads in (1, 2):
        directory = tmp_path / str(threads)
        _engine(mariadb_server, mariadb_db, directory,
                **{"snapshot.mode": "initial_only", "snapshot.max.threads": threads}).run()
        out[threads] = [_TIMES.sub(b"", line) for line in _lines(directory) if b'"op":"r"' in line]
    assert len(out[1]) == 12000 - 1501 + 1
    # Markers differ as Debezium's do with several threads and tables (no "first"): compared apart.
    marker = re.compile(rb'"snapshot":"([a-z_]+)"')
    assert [marker.sub(b"", line) for line in out[2]] == [marker.sub(b"", line) for line in out[1]]
    marks = [marker.search(line).group(1).decode() for line in out[2]]  # files in topic order: small, t
    assert marks[0] == "last_in_data_collection"  # small's only row: last_in_ over first_in_, as with threads
    assert marks[1] == "first_in_data_collection" and marks[-1] == "last" and set(marks[2:-1]) == {"true"}


def test_each_row_once_with_a_writer_then_streaming(mariadb_server, mariadb_db, tmp_path, monkeypatch):
    monkeypatch.setattr(process_snapshot, "CHUNK_ROWS", 2000)
    mariadb_server.execute(["CREATE TABLE a (id INT PRIMARY KEY, pad VARCHAR(40))",
                            "INSERT INTO a SELECT seq, REPEAT('p', 40) FROM seq_1_to_30000",
                            "CREATE TABLE b (id INT PRIMARY KEY, pad VARCHAR(40))",
                            "INSERT INTO b SELECT seq, REPEAT('p', 40) FROM seq_1_to_8000",
                            "CREATE TABLE marker (id INT PRIMARY KEY)", "ANALYZE TABLE a, b"], database=mariadb_db)
    engine = _engine(mariadb_server, mariadb_db, tmp_path, **{"snapshot.max.threads": 2})

    def writer(stop) -> None:
        with mariadb_server.connect(mariadb_db) as conn, conn.cursor() as cur:
            k = 0
            while not stop.is_set():
                k += 1
                cur.execute(f"INSERT INTO a VALUES ({100000 + k}, 'w')")
                cur.execute(f"UPDATE b SET pad = 'u{k}' WHERE id = {k % 8000 + 1}")
                cur.execute(f"DELETE FROM a WHERE id = {k}")
                conn.commit()

    errors = run_with_writer(engine, writer, lambda: mariadb_server.execute("INSERT INTO marker VALUES (1)",
                                                                            database=mariadb_db),
                             lambda: bool(list(tmp_path.glob("*.marker.jsonl"))))
    assert not errors, errors
    events = [v["payload"] for line in _lines(tmp_path) if (v := orjson.loads(line)["value"]) is not None
              and "op" in v["payload"]]
    for name in ("a", "b"):
        state = rebuild_rows(events, name, "pad")
        final = dict(mariadb_server.execute(f"SELECT id, pad FROM {name}", database=mariadb_db))
        assert state == final, f"{name}: the events do not rebuild the table"
    reads = Counter(e["source"]["snapshot"] for e in events if e["op"] == "r")
    assert reads["last"] == 1 and reads["first_in_data_collection"] == 2 and "first" not in reads
