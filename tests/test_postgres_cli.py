"""The CLI as a user runs it: the demo, YAML and JSON configurations, publications, log lines."""

from __future__ import annotations

import json
import subprocess
import sys

import yaml

from cdc_process import CdcProcess, run_cli, server_properties, write_properties


def test_demo_streams_a_throwaway_database_and_cleans_up():
    result = subprocess.run([sys.executable, "-m", "cdc_core.cli", "demo"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert out.count("op=r") == 3 and "op=c" in out and "op=u" in out and "op=d" in out and "tombstone" in out
    assert '"snapshot": "first"' in out and "the throwaway server and its files are removed" in out


def _nested(props: dict) -> dict:
    """``debezium.source.x.y`` -> {"debezium": {"source": {"x.y": ...}}} (YAML-style nesting of the layout)."""
    out: dict = {"debezium": {"source": {}, "sink": {"file": {}}}}
    for k, v in props.items():
        if k.startswith("debezium.source."):
            out["debezium"]["source"][k[len("debezium.source."):]] = v
        elif k.startswith("debezium.sink.file."):
            out["debezium"]["sink"]["file"][k[len("debezium.sink.file."):]] = v
        else:
            out["debezium"]["sink"]["type"] = v
    return out


def test_yaml_and_json_configurations_run_unchanged(pg_server, pg_db, tmp_path):
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1), (2)", dbname=pg_db)
    for kind in ("yaml", "json"):
        work = tmp_path / kind
        work.mkdir()
        props = server_properties(pg_server, pg_db, work, **{"snapshot.mode": "initial_only", "slot.name": f"s_{kind}"})
        path = work / f"app.{kind}"
        doc = _nested(props)
        path.write_text(yaml.safe_dump(doc) if kind == "yaml" else json.dumps(doc))
        assert run_cli("validate", str(path)).returncode == 0
        cdc = CdcProcess(path, work).start()
        assert cdc.wait_exit(60) == 0, cdc.log()
        assert [e["key"]["payload"]["id"] for e in cdc.events("dbserver1.public.t")] == [1, 2]


def test_filtered_publication_lists_only_captured_tables(pg_server, pg_db, tmp_path):
    pg_server.execute("CREATE TABLE a (id int PRIMARY KEY); CREATE TABLE b (id int PRIMARY KEY)", dbname=pg_db)
    props = server_properties(pg_server, pg_db, tmp_path, **{
        "publication.autocreate.mode": "filtered", "table.include.list": "public.a", "snapshot.mode": "initial_only"})
    cdc = CdcProcess(write_properties(tmp_path / "app.properties", props), tmp_path).start()
    assert cdc.wait_exit(60) == 0, cdc.log()
    rows = pg_server.execute("SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = 'dbz_publication'", dbname=pg_db)
    assert rows == [("public", "a")]


def test_disabled_publication_must_exist(pg_server, pg_db, tmp_path):
    props = server_properties(pg_server, pg_db, tmp_path, **{"publication.autocreate.mode": "disabled"})
    cdc = CdcProcess(write_properties(tmp_path / "app.properties", props), tmp_path).start()
    assert cdc.wait_exit(60) == 1
    assert "publication 'dbz_publication' does not exist" in cdc.log()


def test_log_lines_carry_connector_type_name_and_context(pg_server, pg_db, tmp_path):
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)", dbname=pg_db)
    cdc = CdcProcess(write_properties(tmp_path / "app.properties", server_properties(pg_server, pg_db, tmp_path)), tmp_path).start()
    try:
        cdc.wait_events("dbserver1.public.t", 1)
        cdc.wait_until(lambda: "streaming from slot" in cdc.log(), what="streaming")
    finally:
        assert cdc.terminate() == 0
    log = cdc.log()
    assert "[postgres|dbserver1|snapshot]" in log and "[postgres|dbserver1|streaming]" in log, log
    assert "received SIGTERM" in log


def test_replica_identity_warnings_and_filtered_publication_follows_the_include_list(pg_server, pg_db, tmp_path):
    pg_server.execute("CREATE TABLE a (id int PRIMARY KEY); CREATE TABLE nokey (v int); CREATE TABLE uk (v int UNIQUE);"
                      "CREATE TABLE nothing (id int PRIMARY KEY); ALTER TABLE nothing REPLICA IDENTITY NOTHING", dbname=pg_db)
    props = server_properties(pg_server, pg_db, tmp_path, **{
        "publication.autocreate.mode": "filtered", "snapshot.mode": "initial_only",
        "table.include.list": "public.a,public.nokey,public.nothing,public.uk"})
    cdc = CdcProcess(write_properties(tmp_path / "app.properties", props), tmp_path).start()
    assert cdc.wait_exit(60) == 0
    log = cdc.log()
    assert "table public.nothing has REPLICA IDENTITY NOTHING" in log
    assert "table public.nokey has no primary key and REPLICA IDENTITY DEFAULT" in log
    # Keyed by its unique index, but still without a replica identity for UPDATE and DELETE.
    assert "table public.uk has no primary key and REPLICA IDENTITY DEFAULT: UPDATE and DELETE on it fail while " \
           "it is published; add" in log
    props["debezium.source.table.include.list"] = "public.a"
    cdc = CdcProcess(write_properties(tmp_path / "app.properties", props), tmp_path).start()
    assert cdc.wait_exit(60) == 0
    rows = pg_server.execute("SELECT tablename FROM pg_publication_tables WHERE pubname = 'dbz_publication'", dbname=pg_db)
    assert rows == [("a",)], "the publication follows the include list on restart"
