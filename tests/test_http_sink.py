"""``cdc run`` into an HTTP endpoint (Debezium Server's ``http`` sink): a real PostgreSQL, a real HTTP server."""

from __future__ import annotations

import base64
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from brokers.http import RecordingHttpServer  # noqa: E402
from brokers.reference import file_sink_records, stable  # noqa: E402
from cdc_process import CdcProcess, server_properties, write_properties  # noqa: E402
from secrets_check import SECRET, assert_no_secret  # noqa: E402

pytest.importorskip("httpx", reason="the HTTP sink tests need httpx (uv sync --all-extras)")

TOPIC = "dbserver1.public.t"


def http_properties(pg: Any, db: str, workdir: Path, url: str, slot: str, **sink: Any) -> dict[str, Any]:
    """The kit's PostgreSQL source with the http sink instead of the file sink."""
    props = server_properties(pg, db, workdir, **{"slot.name": slot})
    del props["debezium.sink.file.dir"]
    props["debezium.sink.type"] = "http"
    props["debezium.sink.http.url"] = url
    props.update({f"debezium.sink.http.{k}": v for k, v in sink.items()})
    return props


def payload_ids(server: RecordingHttpServer) -> list[int]:
    """The ``id`` of the row in every body answered 2xx, in order."""
    out = []
    for r in server.received:
        payload = orjson.loads(r.body)["payload"]
        out.append((payload["after"] or payload["before"])["id"])
    return out


def test_one_post_per_change_in_order_with_the_file_sinks_bytes_and_headers(pg_server, pg_db, tmp_path):
    """Each record with a value is one POST (tombstones skipped): the body is the file sink's value, headers X-DEBEZIUM-*."""
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY, txt text)", dbname=pg_db)
    pg_server.execute("INSERT INTO t VALUES (1, 'ünï \"q\" 😀'), (2, 'b'), (3, 'c')", dbname=pg_db)
    file_dir, http_dir = tmp_path / "file", tmp_path / "http"
    file_dir.mkdir()
    http_dir.mkdir()
    with RecordingHttpServer() as server:
        reference = CdcProcess(write_properties(file_dir / "app.properties", server_properties(
            pg_server, pg_db, file_dir, **{"slot.name": "slot_hfile"})), file_dir).start()
        cdc = CdcProcess(write_properties(http_dir / "app.properties", http_properties(
            pg_server, pg_db, http_dir, server.url, "slot_http")), http_dir).start()
        try:
            reference.wait_events(TOPIC, 3)
            cdc.wait_until(lambda: len(server.received) >= 3, 30, "the snapshot POSTed")
            pg_server.execute("UPDATE t SET txt = 'x' WHERE id = 2", dbname=pg_db)
            pg_server.execute("DELETE FROM t WHERE id = 3", dbname=pg_db)  # delete (POSTed) and tombstone (not)
            pg_server.execute("UPDATE t SET id = 10 WHERE id = 1", dbname=pg_db)  # delete, tombstone, create
            reference.wait_events(TOPIC, 3 + 1 + 2 + 3)
            cdc.wait_until(lambda: len(server.received) >= 3 + 1 + 1 + 2, 30, "every change POSTed")
            time.sleep(0.5)
        finally:
            assert cdc.terminate() == 0, cdc.log()
            assert reference.terminate() == 0, reference.log()
        requests = server.received
        connections = server.connections
    expected = [(k, v, h) for k, v, h in file_sink_records(file_dir / "events", TOPIC) if v is not None]
    assert len(requests) == len(expected) == 7
    for n, (request, (_key, value, headers)) in enumerate(zip(requests, expected)):
        assert request.path == "/events" and request.headers["content-type"] == "application/json"
        assert stable(request.body) == stable(value), f"request {n}: body differs from the file sink's value"
        sent = {k: v for k, v in request.headers.items() if k.startswith("x-debezium-")}
        want = {f"x-debezium-{name.lower()}": base64.b64encode(
            orjson.dumps(v) if not isinstance(v, str) else v.encode()).decode()
            for name, v in orjson.loads(headers).items()}
        assert sent == want, f"request {n}: headers {sent} != {want}"
    key_change = requests[5]
    newkey = orjson.loads(base64.b64decode(key_change.headers["x-debezium-__debezium.newkey"]))
    # Debezium Server's default header converter: {"schema","payload"}, the key schema with the new key.
    assert newkey["payload"] == {"id": 10} and newkey["schema"]["name"] == TOPIC + ".Key"
    assert connections <= 2, f"{connections} connections: the connection is not kept"
    pg_server.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                      "WHERE slot_name IN ('slot_hfile', 'slot_http')", dbname=pg_db)


def test_500_and_429_for_a_while_are_retried_and_nothing_is_lost(pg_server, pg_db, tmp_path):
    """The endpoint answers 500 and 429 for a while: each record is retried until it is taken, once, in order."""
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname=pg_db)
    with RecordingHttpServer() as server:
        config = write_properties(tmp_path / "app.properties", http_properties(
            pg_server, pg_db, tmp_path, server.url, "slot_retry", retries=50,
            **{"retry.interval.ms": 50, "timeout.ms": 300}))
        cdc = CdcProcess(config, tmp_path).start()
        try:
            pg_server.execute("INSERT INTO t SELECT generate_series(1, 5)", dbname=pg_db)
            cdc.wait_until(lambda: len(server.received) >= 5, 30, "5 rows")
            server.fail_next(*([500] * 10 + [429] * 10 + [503] * 5))
            pg_server.execute("INSERT INTO t SELECT generate_series(6, 30)", dbname=pg_db)
            cdc.wait_until(lambda: len(server.received) >= 30, 30, "30 rows through the failures")
            # A stalled endpoint: each answer comes after timeout.ms, so the POST is sent again.
            server.stall(1.0)
            pg_server.execute("INSERT INTO t VALUES (31)", dbname=pg_db)
            cdc.wait_until(lambda: len(server.requests) >= 30 + 25 + 2, 30, "a timed-out POST sent again")
            server.stall(0)
            cdc.wait_until(lambda: payload_ids(server)[-1:] == [31], 30, "row 31 once the endpoint answers")
            time.sleep(1.5)
        finally:
            assert cdc.terminate() == 0, cdc.log()
        failed = [r.status for r in server.requests if r.status >= 300]
        ids = payload_ids(server)
    assert failed == [500] * 10 + [429] * 10 + [503] * 5
    # Answered in time or not, the endpoint saw row 31 more than once (a timeout cannot tell); nothing else twice.
    assert ids[:30] == list(range(1, 31)) and set(ids[30:]) == {31} and len(ids) >= 32, ids
    assert "retrying" in cdc.log()
    pg_server.execute("SELECT pg_drop_replication_slot('slot_retry')", dbname=pg_db)


def test_401_stops_with_one_line_naming_the_url_without_credentials(pg_server, pg_db, tmp_path):
    """401: exit code 1 at once (not retried), one line with the URL (no user info, no query) and the status."""
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname=pg_db)
    pg_server.execute("INSERT INTO t VALUES (1)", dbname=pg_db)
    with RecordingHttpServer() as server:
        server.answer(401)
        url = f"http://user:{SECRET}@127.0.0.1:{server.port}/events?token={SECRET}"
        props = http_properties(pg_server, pg_db, tmp_path, url, "slot_401")
        cdc = CdcProcess(write_properties(tmp_path / "app.properties", props), tmp_path).start()
        code = cdc.wait_exit(30)
        out = cdc.log()
        attempts = len(server.requests)
    assert code == 1, out
    assert attempts == 1, f"a 401 was retried ({attempts} requests)"
    assert "Traceback" not in out
    errors = [line for line in out.splitlines() if "ERROR" in line]
    assert len(errors) == 1, out
    assert f"http://127.0.0.1:{server.port}/events" in errors[0] and "debezium.sink.http.authentication" in errors[0]
    assert_no_secret("the output of cdc run", out)
    pg_server.execute("SELECT pg_drop_replication_slot('slot_401')", dbname=pg_db)


def test_jwt_authentication_and_a_refused_jwt_password(pg_server, pg_db, tmp_path):
    """``authentication.type=jwt``: a token from <url>auth/authenticate on every POST; a wrong password is one clear line."""
    pg_server.execute("CREATE TABLE t (id int PRIMARY KEY)", dbname=pg_db)
    pg_server.execute("INSERT INTO t VALUES (1), (2)", dbname=pg_db)
    with RecordingHttpServer(jwt_user="dbz", jwt_password="right-pw-1") as server:
        jwt = {"authentication.type": "jwt", "authentication.jwt.username": "dbz",
               "authentication.jwt.url": f"http://127.0.0.1:{server.port}/"}
        good = tmp_path / "good"
        good.mkdir()
        cdc = CdcProcess(write_properties(good / "app.properties", http_properties(
            pg_server, pg_db, good, server.url, "slot_jwt", **jwt, **{"authentication.jwt.password": "right-pw-1"})),
            good).start()
        try:
            cdc.wait_until(lambda: len(server.received) >= 2, 30, "2 rows with a token")
        finally:
            assert cdc.terminate() == 0, cdc.log()
        assert {r.headers["authorization"] for r in server.received} == {"Bearer: token-0"}

        bad = tmp_path / "bad"
        bad.mkdir()
        cdc = CdcProcess(write_properties(bad / "app.properties", http_properties(
            pg_server, pg_db, bad, server.url, "slot_jwt_bad", **jwt, **{"authentication.jwt.password": SECRET})),
            bad, "--log-level", "DEBUG").start()
        code = cdc.wait_exit(30)
        out = cdc.log()
    assert code == 1, out
    assert "Traceback" not in out
    assert len([line for line in out.splitlines() if "debezium.sink.http.authentication.jwt.password" in line]) == 1, out
    assert_no_secret("the output of cdc run", out)
    pg_server.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                      "WHERE slot_name IN ('slot_jwt', 'slot_jwt_bad')", dbname=pg_db)


def test_standard_webhooks_signature_and_plain_headers():
    """``authentication.type=standard-webhooks`` signs each body (HMAC-SHA256); headers plain with their own prefix."""
    import hashlib
    import hmac
    import os

    from cdc_core.config import Config
    from cdc_core.sinks.http import HttpSink
    from cdc_core.spi.sink import SinkRecord

    key = os.urandom(32)
    with RecordingHttpServer() as server:
        sink = HttpSink(Config({"url": server.url, "authentication.type": "standard-webhooks",
                                "authentication.webhook.secret": "whsec_" + base64.b64encode(key).decode(),
                                "headers.encode.base64": "false", "headers.prefix": "X-CDC-"}))
        sink.write([SinkRecord("t", b"1", b'{"a":1}', {"h": "v", "n": {"id": 2}}), SinkRecord("t", b"1", None, {})])
        sink.close()
        (request,) = server.received
    assert request.body == b'{"a":1}'
    assert request.headers["x-cdc-h"] == "v" and request.headers["x-cdc-n"] == '{"id":2}'
    msg_id, ts = request.headers["webhook-id"], request.headers["webhook-timestamp"]
    expected = base64.b64encode(hmac.new(key, f"{msg_id}.{ts}.".encode() + request.body, hashlib.sha256).digest())
    assert request.headers["webhook-signature"] == "v1," + expected.decode()
    assert msg_id.startswith("msg_") and abs(int(ts) - time.time()) < 60
