"""TLS with client certificates on PostgreSQL: a server that admits the capture user only with a certificate.

The throwaway server runs with ``ssl=on`` and certificates made by ``openssl`` for this test; its
pg_hba.conf admits ``cdc_tls`` over TLS with a valid client certificate only (``hostssl ... cert``),
for both the replication and the regular connections, and refuses it without TLS.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from cdc_core.engine import Engine
from cdc_core.errors import ConfigError, ConnectorError
from cdc_postgres.embedded import EmbeddedPostgres
from cdc_process import CdcProcess, run_cli, server_properties, write_properties
from tls_certs import PASSPHRASE, Certs, make_certs

USER = "cdc_tls"
HBA = f"""\
hostssl     all          {USER}  127.0.0.1/32  cert
hostssl     replication  {USER}  127.0.0.1/32  cert
hostnossl   all          {USER}  127.0.0.1/32  reject
hostnossl   replication  {USER}  127.0.0.1/32  reject
"""


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Certs:
    """CA, server (localhost) and client (CN=cdc_tls) certificates."""
    return make_certs(tmp_path_factory.mktemp("pg-certs"), USER)


@pytest.fixture(scope="module")
def tls_server(certs) -> Iterator[EmbeddedPostgres]:
    """A PostgreSQL server with TLS on that admits ``USER`` only with a client certificate signed by the CA."""
    server = EmbeddedPostgres(settings={"ssl": "on", "ssl_cert_file": certs.server_cert,
                                        "ssl_key_file": certs.server_key, "ssl_ca_file": certs.ca}, hba=HBA)
    server.start()
    try:
        server.execute(f"CREATE ROLE {USER} LOGIN REPLICATION SUPERUSER")
        yield server
    finally:
        server.stop()


@pytest.fixture
def db(tls_server) -> str:
    """A fresh database with one table holding one row."""
    name = f"tls_{uuid.uuid4().hex[:10]}"
    tls_server.create_database(name)
    tls_server.execute("CREATE TABLE items (id int PRIMARY KEY, note text)", dbname=name)
    tls_server.execute("INSERT INTO items VALUES (1, 'snapshot')", dbname=name)
    return name


def _props(server: EmbeddedPostgres, db: str, workdir: Path, certs: Certs, **overrides) -> dict:
    tls = {"database.hostname": "localhost", "database.user": USER, "database.sslmode": "verify-full",
           "database.sslrootcert": certs.ca, "database.sslcert": certs.client_cert,
           "database.sslkey": certs.client_key_encrypted, "database.sslpassword": PASSPHRASE,
           "table.include.list": "public.items", "slot.name": f"s_{db}", "publication.name": f"p_{db}"}
    tls.update(overrides)
    return server_properties(server, db, workdir, **{k: v for k, v in tls.items() if v is not None})


def _assert_no_passphrase(where: str, text: str | bytes) -> None:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    assert PASSPHRASE not in text and "walrus-PASSPHRASE" not in text, f"the key's passphrase appears in {where}"


def _refusal(server: EmbeddedPostgres, db: str, workdir: Path, certs: Certs, cli: bool = False, **overrides) -> str:
    """Run cdc with ``overrides`` (``cdc run``, or the engine in this process); it must stop with one error line."""
    props = _props(server, db, workdir, certs, **overrides)
    if not cli:
        source = {k.removeprefix("debezium.source."): v for k, v in props.items() if k.startswith("debezium.source.")}
        source.pop("offset.storage.file.filename")
        with pytest.raises(Exception) as failure:
            Engine(source).run(lambda records: None)
        assert isinstance(failure.value, (ConnectorError, ConfigError)), repr(failure.value)
        line = str(failure.value)
        assert "\n" not in line.strip(), line
        _assert_no_passphrase("the error", line)
        return line
    config = write_properties(workdir / f"cfg-{uuid.uuid4().hex[:6]}.properties", props)
    done = run_cli("run", str(config))
    assert done.returncode != 0, done.stderr
    _assert_no_passphrase("cdc's output", done.stdout + done.stderr)
    errors = [line for line in done.stderr.splitlines() if " ERROR " in line]
    assert len(errors) == 1, done.stderr
    return errors[0]


def test_streams_over_tls_with_a_client_certificate(tls_server, db, certs, tmp_path):
    # A Debezium configuration may name a JDBC socket factory: accepted, with a warning that libpq has none.
    config = write_properties(tmp_path / "app.properties", _props(
        tls_server, db, tmp_path, certs, **{"database.sslfactory": "org.postgresql.ssl.DefaultJavaSSLFactory"}))
    cdc = CdcProcess(config, tmp_path, "--log-level", "DEBUG").start()
    try:
        events = cdc.wait_events("dbserver1.public.items", 1)
        assert events[0]["value"]["payload"]["after"] == {"id": 1, "note": "snapshot"}
        tls_server.execute("INSERT INTO items VALUES (2, 'stream')", dbname=db)
        events = cdc.wait_events("dbserver1.public.items", 2)
        assert events[1]["value"]["payload"]["op"] == "c" and events[1]["value"]["payload"]["after"]["id"] == 2
        # Both the walsender (replication) and the regular connection of the capture user use TLS with its certificate.
        rows = tls_server.execute(
            "SELECT a.backend_type, s.ssl, s.client_dn FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) "
            "WHERE a.usename = %s", params=(USER,))
        kinds = {kind for kind, ssl, dn in rows if ssl and dn == f"/CN={USER}"}
        assert {"walsender", "client backend"} <= kinds, rows
        assert all(ssl for _, ssl, _ in rows), rows
    finally:
        assert cdc.terminate() == 0, cdc.log()
    _assert_no_passphrase("the log", cdc.log())
    assert "database.sslfactory=org.postgresql.ssl.DefaultJavaSSLFactory is ignored" in cdc.log()
    for path in tmp_path.rglob("*"):
        if path.is_file() and path != config:
            _assert_no_passphrase(str(path), path.read_bytes())
    for command in (["validate"], ["--log-level", "DEBUG", "validate"]):
        done = run_cli(*command, str(config))
        assert done.returncode == 0, done.stderr
        _assert_no_passphrase(f"`cdc {' '.join(command)}`", done.stdout + done.stderr)


def test_without_a_client_certificate_the_error_names_the_property(tls_server, db, certs, tmp_path):
    line = _refusal(tls_server, db, tmp_path, certs, True, **{"database.sslmode": "require", "database.sslcert": None,
                                                         "database.sslkey": None, "database.sslpassword": None})
    assert "database.sslcert" in line and "client certificate" in line, line


def test_without_tls_the_server_refuses_and_the_error_names_sslmode(tls_server, db, certs, tmp_path):
    line = _refusal(tls_server, db, tmp_path, certs, **{"database.sslmode": "disable"})
    assert "database.sslmode" in line, line


def test_verify_full_against_another_host_name_fails_clearly(tls_server, db, certs, tmp_path):
    # The server's certificate names localhost; 127.0.0.1 is the same server under a name it does not carry.
    line = _refusal(tls_server, db, tmp_path, certs, **{"database.hostname": "127.0.0.1"})
    assert "does not match host name" in line and "database.hostname" in line, line


def test_verify_ca_with_the_wrong_ca_fails_clearly(tls_server, db, certs, tmp_path):
    line = _refusal(tls_server, db, tmp_path, certs, **{"database.sslmode": "verify-ca",
                                                         "database.sslrootcert": certs.other_ca})
    assert "database.sslrootcert" in line, line


def test_wrong_key_passphrase_fails_naming_sslpassword_and_never_shows_it(tls_server, db, certs, tmp_path):
    line = _refusal(tls_server, db, tmp_path, certs, True, **{"database.sslpassword": PASSPHRASE + "-wrong"})
    assert "database.sslpassword" in line, line
    line = _refusal(tls_server, db, tmp_path, certs, **{"database.sslpassword": None})
    assert "database.sslpassword" in line, line


def test_a_missing_certificate_file_is_refused_at_start(tls_server, db, certs, tmp_path):
    config = write_properties(tmp_path / "missing.properties",
                              _props(tls_server, db, tmp_path, certs, **{"database.sslcert": tmp_path / "nope.crt"}))
    done = run_cli("validate", str(config))
    assert done.returncode == 2, done.stderr
    assert "database.sslcert" in done.stderr and "does not exist" in done.stderr, done.stderr
    _assert_no_passphrase("`cdc validate`", done.stdout + done.stderr)
