"""``cdc run`` into NATS JetStream (Debezium Server's ``nats-jetstream`` sink) on a throwaway nats-server."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from broker_sink_scenarios import (
    SECRET, Message, broker_restart_mid_stream, changes_once_in_order_as_file_sink, kill_9_under_writes,
    refused_at_start, stop_while_broker_down,
)

pytest.importorskip("nats", reason="the NATS sink tests need nats-py (uv sync --all-extras)")
if not (os.path.exists("/usr/sbin/nats-server") or shutil.which("nats-server")):
    pytest.skip("nats-server is not installed (apt-get install nats-server)", allow_module_level=True)

from brokers.nats import EmbeddedNats  # noqa: E402

STREAM = "CDC"


class Nats:
    """The throwaway nats-server as the scenarios see it: a file-storage stream created by the sink."""

    publishes_tombstones = False

    def __init__(self, server: EmbeddedNats):
        self.server = server
        self._seen: list[Message] = []  # the stream only grows: read each message once

    def sink_properties(self) -> dict[str, Any]:
        return {"debezium.sink.type": "nats-jetstream", "debezium.sink.nats-jetstream.url": self.server.url,
                "debezium.sink.nats-jetstream.create-stream": "true",
                "debezium.sink.nats-jetstream.stream-name": STREAM,
                "debezium.sink.nats-jetstream.subjects": "dbserver1.>",
                "debezium.sink.nats-jetstream.storage": "file",
                "debezium.sink.nats-jetstream.sync.retry.interval.ms": "200",
                "debezium.sink.nats-jetstream.sync.retry.max.interval.ms": "1000",
                "debezium.sink.nats-jetstream.sync.retries": "-1"}

    def prepare(self, topics: list[str]) -> None:
        self._seen = []
        asyncio.run(self._reset())

    async def _reset(self) -> None:
        import nats

        nc = await nats.connect(self.server.url)
        try:
            try:
                await nc.jetstream().delete_stream(STREAM)
            except Exception:  # noqa: BLE001 - not there yet
                pass
        finally:
            await nc.close()

    def messages(self) -> list[Message]:
        try:
            asyncio.run(self._read())
        except Exception:  # noqa: BLE001 - the server is down or the stream not there yet: nothing new now
            pass
        return list(self._seen)

    async def _read(self) -> None:
        import nats

        nc = await nats.connect(self.server.url, allow_reconnect=False, connect_timeout=2)
        try:
            js = nc.jetstream()
            info = await js.stream_info(STREAM)
            for seq in range(max(info.state.first_seq, len(self._seen) + 1), info.state.last_seq + 1):
                msg = await js.get_msg(STREAM, seq)
                self._seen.append(Message(msg.subject, msg.data, dict(msg.headers or {})))
        finally:
            await nc.close()

    def stop(self) -> None:
        self.server._shutdown()

    def start(self) -> None:
        self.server.start()


@pytest.fixture(scope="module")
def nats_server() -> Iterator[EmbeddedNats]:
    with EmbeddedNats() as server:
        yield server


@pytest.fixture
def broker(nats_server: EmbeddedNats) -> Nats:
    return Nats(nats_server)


def test_every_change_once_in_order_with_the_file_sinks_bytes_and_headers(broker, pg_server, pg_db, tmp_path):
    """The values the file sink writes, in the same order, with __debezium.oldkey/newkey as NATS headers."""
    changes_once_in_order_as_file_sink(broker, pg_server, pg_db, tmp_path)
    got = broker.messages()
    assert all(m.headers.get("Nats-Msg-Id", "").startswith("cdc-") for m in got)


def test_kill_9_under_writes_loses_nothing(broker, pg_server, pg_db, tmp_path):
    """After kill -9 and a restart every change is there; re-sent ones are at most the unacknowledged batches."""
    duplicates = kill_9_under_writes(broker, pg_server, pg_db, tmp_path)
    print(f"duplicates after kill -9: {duplicates}")
    assert duplicates <= 2048  # at most one max.batch.size of unacknowledged records is sent again


def test_nats_server_restart_mid_stream_loses_nothing(broker, pg_server, pg_db, tmp_path):
    """nats-server stops for seconds and comes back on the same port and store: cdc retries and resumes."""
    duplicates = broker_restart_mid_stream(broker, pg_server, pg_db, tmp_path)
    print(f"duplicates after the broker restart: {duplicates}")
    assert duplicates <= 2048


def test_sigterm_while_the_broker_is_down_stops_at_once_and_loses_nothing(broker, pg_server, pg_db, tmp_path):
    """The sink retries against a stopped nats-server; SIGTERM ends cdc run at once (exit 0), nothing is lost."""
    duplicates = stop_while_broker_down(broker, pg_server, pg_db, tmp_path)
    assert duplicates <= 2048


def test_refusals_are_one_clear_line(pg_server, pg_db, tmp_path):
    """Wrong password, unknown host, no stream for the subject: one line naming the property, exit 1."""
    n = "debezium.sink.nats-jetstream."
    with EmbeddedNats({"user": "cdc", "password": "right-one"}) as secured:
        lines = refused_at_start(pg_server, pg_db, tmp_path, {
            "password": ({"debezium.sink.type": "nats-jetstream", n + "url": secured.url, n + "auth.user": "cdc",
                          n + "auth.password": SECRET}, n + "auth.user"),
            "no-stream": ({"debezium.sink.type": "nats-jetstream",
                           n + "url": f"nats://cdc:right-one@{secured.host}:{secured.port}"}, n + "create-stream"),
            "host": ({"debezium.sink.type": "nats-jetstream", n + "url": "nats://no-such-host.invalid:4222",
                      n + "auth.user": "cdc", n + "auth.password": SECRET}, n + "url"),
        })
    assert "credentials" in lines["password"]
    assert "dbserver1.public.t" in lines["no-stream"]
    assert "no-such-host.invalid" in lines["host"]


def test_validate_names_each_bad_property(pg_server, pg_db, tmp_path):
    """``cdc validate``: a missing url, a bad storage, a misspelt property, each on its own line (exit 2)."""
    from cdc_process import run_cli, server_properties, write_properties

    props = {k: v for k, v in server_properties(pg_server, pg_db, tmp_path).items() if not k.startswith("debezium.sink.")}
    n = "debezium.sink.nats-jetstream."
    props.update({"debezium.sink.type": "nats-jetstream", n + "storage": "disk", n + "create-streams": "true",
                  n + "auth.password": SECRET})
    done = run_cli("validate", str(write_properties(tmp_path / "app.properties", props)))
    assert done.returncode == 2, done.stderr
    for expected in (n + "url: is required", n + "storage: 'disk' is not one of: memory, file",
                     n + "create-streams: unknown property"):
        assert expected in done.stderr, done.stderr
    assert SECRET not in done.stdout + done.stderr


def test_a_resent_batch_is_stored_once_and_sync_mode_keeps_order(nats_server):
    """A batch sent again (as a retry does) is dropped by JetStream (same Nats-Msg-Id); async.enabled=false works."""
    from cdc_core.config import Config
    from cdc_core.sinks.nats_jetstream import NatsJetStreamSink
    from cdc_core.spi.sink import SinkRecord

    broker = Nats(nats_server)
    broker.prepare([])
    for mode in ("true", "false"):
        sink = NatsJetStreamSink(Config({"url": nats_server.url, "create-stream": "true", "stream-name": STREAM,
                                         "subjects": "dbserver1.>", "async.enabled": mode}))
        try:
            batch = [SinkRecord("dbserver1.public.t", None, b'{"n":%d}' % i, {}) for i in range(100)]
            messages = sink._messages(batch)
            sink._run(sink._publish(messages))
            sink._run(sink._publish(messages))  # the same messages again, as a retry of the batch sends them
        finally:
            sink.close()
    got = broker.messages()
    assert [m.value for m in got] == [b'{"n":%d}' % i for i in range(100)] * 2
