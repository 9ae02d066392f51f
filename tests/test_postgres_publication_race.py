"""Two connectors started at once on one database, one publication name: the one that loses the race goes on."""

from __future__ import annotations

import threading

import psycopg
import pytest

from test_postgres_query_timeout import _run_until


@pytest.mark.parametrize("mode, theirs", [("all_tables", "FOR ALL TABLES"), ("filtered", "FOR TABLE other")])
def test_a_publication_created_meanwhile_by_another_client_is_used(pg_server, pg_db, mode, theirs):
    # The other client's CREATE PUBLICATION is not committed when the connector looks for the publication, so the
    # connector's own CREATE waits for it and then meets the duplicate: before, "unexpected error (UniqueViolation)".
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1), (2); "
                      "CREATE TABLE other (id int PRIMARY KEY)", dbname=pg_db)
    other = psycopg.connect(host=pg_server.host, port=pg_server.port, user=pg_server.user, dbname=pg_db)
    other.execute(f"CREATE PUBLICATION dbz_publication {theirs}")  # a transaction left open
    config = {"connector.class": "postgres", "database.hostname": pg_server.host, "database.port": pg_server.port,
              "database.user": pg_server.user, "database.dbname": pg_db, "topic.prefix": "race",
              "table.include.list": "public.t", "publication.autocreate.mode": mode, "errors.max.retries": 0}
    timer = threading.Timer(1.0, other.commit)  # once the connector waits on the other client's CREATE
    timer.start()
    try:
        error, records = _run_until(pg_server, pg_db, config, lambda rs: len(rs) >= 2)
    finally:
        timer.join()
        other.close()
    assert error is None, error
    assert sorted(r.value["after"]["id"] for r in records if r.value) == [1, 2]
    if mode == "filtered":  # the publication the other client made now lists the connector's tables only
        rows = pg_server.execute("SELECT tablename FROM pg_publication_tables WHERE pubname = 'dbz_publication'",
                                 dbname=pg_db)
        assert [r[0] for r in rows] == ["t"]


@pytest.mark.parametrize("meanwhile", [False, True])
def test_filtered_mode_refuses_a_publication_for_all_tables(pg_server, pg_db, meanwhile):
    # Debezium 2.7.4 refuses it too (initPublication: "can not be altered"); before, PostgreSQL's own error came up
    # raw (ObjectNotInPrerequisiteState from ALTER PUBLICATION ... SET TABLE). Nothing is changed on the server.
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)", dbname=pg_db)
    other = psycopg.connect(host=pg_server.host, port=pg_server.port, user=pg_server.user, dbname=pg_db)
    other.execute("CREATE PUBLICATION dbz_publication FOR ALL TABLES")
    if not meanwhile:
        other.commit()
    config = {"connector.class": "postgres", "database.hostname": pg_server.host, "database.port": pg_server.port,
              "database.user": pg_server.user, "database.dbname": pg_db, "topic.prefix": "allpub",
              "table.include.list": "public.t", "publication.autocreate.mode": "filtered", "errors.max.retries": 0}
    timer = threading.Timer(1.0, other.commit) if meanwhile else None
    if timer is not None:
        timer.start()
    try:
        error, records = _run_until(pg_server, pg_db, config, lambda rs: len(rs) >= 1)
    finally:
        if timer is not None:
            timer.join()
        other.close()
    assert error is not None and not records
    message = str(error)
    assert "'dbz_publication'" in message and "FOR ALL TABLES" in message
    assert "publication.autocreate.mode" in message and pg_db in message
    rows = pg_server.execute("SELECT puballtables FROM pg_publication WHERE pubname = 'dbz_publication'", dbname=pg_db)
    assert rows == [(True,)]
