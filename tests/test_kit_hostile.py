"""Kit scenario 5, for every connector: hostile names and values, through the snapshot and the stream.

Schemas (databases on MariaDB), tables and columns named with quotes, dots, spaces, backslashes,
unicode and reserved words; values at the edges: the largest and smallest integers and doubles,
38-digit decimals, multi-megabyte texts with quotes, newlines, unicode and (where the type allows)
NUL. The events must carry exactly the values and the names, on the topics the spec gives
(characters outside ``[A-Za-z0-9._-]`` replaced by ``_``).
"""

from __future__ import annotations

from typing import Any

from cdc_process import CdcProcess
from kit import Column, Table, Workdir, insert_rows, payload, read_rows, sanitize_topic, start_cdc, wait_replayed

SCHEMAS = ['we"ird sch.ema', "Sché'ma ü", "select"]
TABLES = ['ta"ble.with dots', "Tâble `tick`", "from", "a\\b"]
COLUMNS = ['"quoted"', "dot.col", "sp ace", "ünïcödé", "select", "Mixed Case", "back`tick", "emoji😀", "a\\b"]

HUGE = 2_000_000


def _names(fx: Any, names: list[str], kind: str) -> list[str]:
    return [n for n in names if fx.accepts_identifier(n, kind)]


def _table(fx: Any, schema: str, name: str) -> Table:
    """A table whose key and every other column has a hostile name (plus ``v``, the replay's version)."""
    cols = _names(fx, COLUMNS, "column")
    types = ["int64", "int32", "float64", "decimal", "text"]
    columns = [Column(cols[0], "int64", nullable=False), Column("v", "int64", nullable=False)]
    columns += [Column(c, types[i % len(types)]) for i, c in enumerate(cols[1:], 1)]
    return Table(name, tuple(columns), key=(cols[0],), schema=schema)


def _values(fx: Any, table: Table, n: int, v: int) -> dict[str, Any]:
    """Row ``n``: edge values by type, cycling so each column sees each edge."""
    nul = "\x00" if fx.text_allows_nul else ""
    edges = {
        "int64": [9223372036854775807, -9223372036854775808, 0],
        "int32": [2147483647, -2147483648, 0],
        "float64": [1.7976931348623157e308, -2.2250738585072014e-308, 0.5],
        "decimal": [fx.decimal_max, "-0.0000000001", "0E-10"],
        "text": ["x" * HUGE, f"it's \"quoted\" \\ back\nslash\ttab {nul}é ü 中文 😀", ""],
    }
    row: dict[str, Any] = {}
    for c in table.columns:
        if c.name == "v":
            row[c.name] = v
        elif c.name == table.key[0]:
            row[c.name] = [9223372036854775807, -9223372036854775808][n] if n < 2 else n
        else:
            row[c.name] = edges[c.type][(n + len(row)) % 3]
    return row


def test_hostile_names_and_values_arrive_exactly_on_the_spec_topics(connector, tmp_path):
    """Snapshot and stream: every name and value exact, topics sanitized as Debezium does."""
    fx = connector
    schemas = _names(fx, SCHEMAS, "schema")
    tables = _names(fx, TABLES, "table")
    for schema in schemas:
        fx.create_schema(schema)
    first = _table(fx, schemas[0], tables[0])
    fx.create_table(first)
    insert_rows(fx, first, [_values(fx, first, n, n) for n in range(3)])
    work = Workdir(tmp_path)
    cdc = start_cdc(fx, work, **{"decimal.handling.mode": "string"})
    later = [_table(fx, schema, name) for schema in schemas for name in tables][1:]
    try:
        wait_replayed(cdc, fx, first)
        for t in later:  # created while streaming: MariaDB parses their DDL from the binlog
            fx.create_table(t)
            insert_rows(fx, t, [_values(fx, t, n, n) for n in range(3)])
        _change(fx, first)
        for t in [first, *later]:
            wait_replayed(cdc, fx, t)
    finally:
        assert cdc.terminate() == 0, cdc.log()
    for t in [first, *later]:
        _check_events(fx, cdc, t)
    assert "Traceback" not in cdc.log()


def _change(fx: Any, table: Table) -> None:
    """An update of every column but the key, and a delete, through hostile names."""
    q = fx.quote
    qualified = f"{q(table.schema)}.{q(table.name)}"
    key = table.key[0]
    row = _values(fx, table, 1, 10)
    sets = [c.name for c in table.columns if c.name != key]
    with fx.connect() as conn:
        cur = conn.cursor()
        cur.execute(f"UPDATE {qualified} SET {', '.join(f'{q(c)} = %s' for c in sets)} WHERE {q(key)} = %s",
                    [*(row[c] for c in sets), 9223372036854775807])
        cur.execute(f"DELETE FROM {qualified} WHERE {q(key)} = %s", (2,))
        conn.commit()


def _check_events(fx: Any, cdc: CdcProcess, table: Table) -> None:
    """The topic is the spec's; source names the table; key and value fields carry the column names."""
    topic = fx.topic(table)
    database = [fx.database] if fx.topic_names_database else []
    assert topic == sanitize_topic(".".join(["dbserver1", *database, fx.schema_of(table), table.name]))
    events = [e for e in cdc.events(topic) if e["value"] is not None]
    assert events, f"no events on {topic}; topics: {sorted(p.name for p in cdc.events_dir.iterdir())}"
    names = table.column_names()
    for e in events:
        assert e["topic"] == topic
        value = payload(e["value"])
        source = value["source"]
        assert (source.get("schema", source["db"]), source["table"]) == (fx.schema_of(table), table.name), source
        assert list(payload(e["key"])) == list(table.key)
        row = value["after"] or value["before"]
        assert list(row) == names
        fields = [f["field"] for f in e["value"]["schema"]["fields"] if f["field"] == "after"][0:1]
        assert fields, e["value"]["schema"]
    rows = read_rows(fx, table)
    assert rows  # and the replay (wait_replayed) already matched them value for value
