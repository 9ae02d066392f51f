"""``cdc demo``: a throwaway PostgreSQL, a few changes, and their change events on the terminal."""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from pathlib import Path

import orjson

from cdc_core.engine import Engine
from cdc_core.events import ChangeRecord
from cdc_core.serializers.json import JsonSerializer
from cdc_core.sinks.file import FileSink
from cdc_core.config import Config

#: The table of the PostgreSQL chapter's example events.
CUSTOMERS_TABLE = """
CREATE TABLE customers (
  id SERIAL,
  first_name VARCHAR(255) NOT NULL,
  last_name VARCHAR(255) NOT NULL,
  email VARCHAR(255) NOT NULL,
  PRIMARY KEY(id)
);
"""

SCHEMA = CUSTOMERS_TABLE + """
INSERT INTO customers (first_name, last_name, email) VALUES
  ('Sally', 'Thomas', 'sally.thomas@acme.com'),
  ('George', 'Bailey', 'gbailey@foobar.com'),
  ('Edward', 'Walker', 'ed@walker.com');
"""

CHANGES = [
    "INSERT INTO customers (first_name, last_name, email) VALUES ('Anne', 'Kretchmar', 'annek@noanswer.org')",
    "UPDATE customers SET first_name = 'Anne Marie' WHERE email = 'annek@noanswer.org'",
    "DELETE FROM customers WHERE first_name = 'George'",
]


def _describe(r: ChangeRecord) -> str:
    if r.value is None:
        return f"{r.topic:<30} tombstone  key={orjson.dumps(r.key).decode()}"
    v = r.value
    row = v["after"] if v["after"] is not None else v["before"]
    return (f"{r.topic:<30} op={v['op']}  snapshot={v['source']['snapshot']:<24} lsn={v['source']['lsn']}\n"
            f"{'':<30} key={orjson.dumps(r.key).decode()}  {'after' if v['after'] is not None else 'before'}="
            f"{orjson.dumps(row).decode()}")


def main() -> int:
    """Run the demo; returns the exit code."""
    from cdc_postgres.embedded import EmbeddedPostgres

    out = sys.stdout
    out.write("starting a throwaway PostgreSQL server...\n")
    with EmbeddedPostgres() as pg, tempfile.TemporaryDirectory(prefix="cdc-demo-") as tmp:
        pg.create_database("demo")
        pg.execute(SCHEMA, dbname="demo")
        out.write(f"PostgreSQL {pg.port} ready; database 'demo' has table customers with 3 rows\n\n")
        config = Config({
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "database.hostname": pg.host, "database.port": pg.port, "database.user": pg.user,
            "database.dbname": "demo", "topic.prefix": "demo", "slot.name": "cdc_demo",
            "offset.storage.file.filename": str(Path(tmp) / "offsets.json"),
            "poll.interval.ms": 100,
        })
        sink = FileSink(Config({"dir": str(Path(tmp) / "events")}))
        serializer = JsonSerializer()
        engine = Engine(config)
        seen: list[ChangeRecord] = []
        lock = threading.Lock()

        def handler(records: list[ChangeRecord]) -> None:
            sink.write(serializer.serialize(records))
            with lock:
                for r in records:
                    seen.append(r)
                    out.write(_describe(r) + "\n")
                out.flush()

        runner = threading.Thread(target=engine.run, args=(handler,), daemon=True)
        runner.start()

        def wait_for(n: int, timeout: float = 30.0) -> bool:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                with lock:
                    if len(seen) >= n:
                        return True
                time.sleep(0.05)
            return False

        out.write("-- snapshot --\n")
        ok = wait_for(3)
        out.write("\n-- streaming: making changes --\n")
        for statement in CHANGES:
            out.write(f"SQL> {statement}\n")
            pg.execute(statement, dbname="demo")
        ok = ok and wait_for(3 + 1 + 1 + 2)
        engine.stop()
        runner.join(timeout=30)
        sink.close()
        files = sorted((Path(tmp) / "events").glob("*.jsonl"))
        if files:
            first = orjson.loads(files[0].read_bytes().splitlines()[0])
            out.write(f"\nthe file sink wrote {', '.join(f.name for f in files)}; its first line's value payload:\n")
            out.write(orjson.dumps(first["value"]["payload"], option=orjson.OPT_INDENT_2).decode() + "\n")
        if not ok:
            out.write("error: not every expected change event arrived in time\n")
            return 1
        out.write("\ndone; the throwaway server and its files are removed.\n")
    return 0
