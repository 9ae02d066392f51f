"""``snapshot.max.threads=2`` against the real Debezium 3.0.7 on one MariaDB (its MySQL connector) and one
PostgreSQL: the same rows per table, in the same order, with the same ``source.snapshot`` markers (the
snapshot's single ``last`` record may fall on another table: which table ends last depends on the threads)."""

from __future__ import annotations

import pytest

from conformance.check import require_real_debezium
from conformance.harness import capture
from test_conformance_mariadb import _side
from test_conformance_postgres import _side as _pg_side

SIZES = {"a": 3000, "b": 2000, "c": 1}


@pytest.mark.timeout(600)
def test_markers_and_order_per_table_as_debezium(mariadb_server, mariadb_db, tmp_path):
    require_real_debezium()
    setup = ";\n".join(f"CREATE TABLE {t} (id INT PRIMARY KEY, v VARCHAR(10));\n"
                       f"INSERT INTO {t} SELECT seq, 'x' FROM seq_1_to_{n}" for t, n in SIZES.items())
    got = capture(_side(mariadb_server, mariadb_db), setup, [], {"snapshot.max.threads": 2}, tmp_path)
    _compare(got, mariadb_db)


@pytest.mark.timeout(600)
def test_markers_and_order_per_table_as_debezium_postgres(pg_server, pg_db, tmp_path):
    require_real_debezium()
    setup = "; ".join(f"CREATE TABLE {t} (id int PRIMARY KEY, v varchar(10)); "
                      f"INSERT INTO {t} SELECT g, 'x' FROM generate_series(1, {n}) g" for t, n in SIZES.items())
    got = capture(_pg_side(pg_server, pg_db), setup, [], {"snapshot.max.threads": 2}, tmp_path)
    _compare(got, "public")


def _compare(got, schema: str) -> None:
    """Per table: cdc's snapshot reads (id, marker) equal Debezium's; one ``last`` on each side."""

    def reads(records, table):
        out = []
        for r in records.get(f"conformance.{schema}.{table}", []):
            value = r["value"]["payload"] if "schema" in (r["value"] or {}) else r["value"]
            if value and value["op"] == "r":
                out.append((value["after"]["id"], value["source"]["snapshot"]))
        return out

    lasts = {"debezium": 0, "cdc": 0}
    for table in SIZES:
        theirs, ours = reads(got.debezium, table), reads(got.cdc, table)
        lasts["debezium"] += [m for _, m in theirs].count("last")
        lasts["cdc"] += [m for _, m in ours].count("last")
        if theirs and theirs[-1][1] == "last":
            theirs[-1] = (theirs[-1][0], "last_in_data_collection")
        if ours and ours[-1][1] == "last":
            ours[-1] = (ours[-1][0], "last_in_data_collection")
        assert len(ours) == SIZES[table] and ours == theirs, (table, ours[:2], theirs[:2], ours[-2:], theirs[-2:])
    # At most one ``last`` each (it may be on the ping table, which the harness leaves out, if the
    # snapshot read pings already inserted while the other engine started).
    assert lasts["debezium"] <= 1 and lasts["cdc"] <= 1, lasts
