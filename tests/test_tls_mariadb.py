"""TLS with client certificates on MariaDB: a capture user created ``REQUIRE X509`` logs in only with one.

The throwaway server runs with ``ssl_cert``/``ssl_key``/``ssl_ca`` made by ``openssl`` for this test.
The user's certificate and key come from ``database.ssl.keystore`` (PKCS12, JKS or PEM) and the server
is checked against ``database.ssl.truststore``; both the snapshot connection and the binlog connection
must log in, so a streamed row proves the binlog connection presented the certificate too.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from cdc_core.engine import Engine
from cdc_core.errors import ConfigError, ConnectorError
from cdc_mysql.embedded import EmbeddedMariaDB
from cdc_process import CdcProcess, run_cli, write_properties
from kit.engine import EngineThread
from mariadb_cdc import connector_config, mariadb_properties
from tls_certs import PASSPHRASE, Certs, make_certs

USER = "cdc_tls"


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Certs:
    """CA, server (localhost) and client (CN=cdc_tls) certificates; JKS stores too where keytool exists."""
    return make_certs(tmp_path_factory.mktemp("mariadb-certs"), USER, jks=True)


@pytest.fixture(scope="module")
def tls_server(certs) -> Iterator[EmbeddedMariaDB]:
    """MariaDB with TLS on, and ``USER`` (no password) admitted only with a certificate signed by the CA."""
    server = EmbeddedMariaDB(settings={"ssl_cert": certs.server_cert, "ssl_key": certs.server_key,
                                       "ssl_ca": certs.ca})
    server.start()
    try:
        server.execute([f"CREATE USER '{USER}'@'%' REQUIRE X509", f"GRANT ALL ON *.* TO '{USER}'@'%'"])
        yield server
    finally:
        server.stop()


@pytest.fixture
def db(tls_server) -> str:
    """A fresh database with one table holding one row."""
    name = f"tls_{uuid.uuid4().hex[:10]}"
    tls_server.create_database(name)
    tls_server.execute(["CREATE TABLE items (id INT PRIMARY KEY, note VARCHAR(20))",
                        "INSERT INTO items VALUES (1, 'snapshot')"], name)
    return name


def _tls(certs: Certs, store: str = "pkcs12", **overrides) -> dict:
    keystore, truststore = {"pkcs12": (certs.keystore_p12, certs.truststore_p12),
                            "jks": (certs.keystore_jks, certs.truststore_jks),
                            "pem": (_pem_keystore(certs), certs.ca)}[store]
    props = {"database.hostname": "localhost", "database.user": USER, "database.password": "",
             "database.ssl.mode": "verify_identity", "database.ssl.keystore": keystore,
             "database.ssl.keystore.password": PASSPHRASE, "database.ssl.truststore": truststore,
             "database.ssl.truststore.password": PASSPHRASE}
    props.update(overrides)
    return {k: str(v) for k, v in props.items() if v is not None}


def _pem_keystore(certs: Certs) -> Path:
    """The client's certificate and its passphrase-protected key in one PEM file."""
    path = certs.dir / "keystore.pem"
    if not path.exists():
        path.write_bytes(certs.client_cert.read_bytes() + certs.client_key_encrypted.read_bytes())
    return path


def _ids(records) -> list[int]:
    return [r.value["after"]["id"] for r in records if r.value is not None and r.value.get("op") in ("r", "c")]


def _assert_no_passphrase(where: str, text: str | bytes) -> None:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    assert PASSPHRASE not in text and "walrus-PASSPHRASE" not in text, f"the store password appears in {where}"


def _refusal(server: EmbeddedMariaDB, db: str, certs: Certs, **tls) -> str:
    """The engine must stop with one error line (a configuration or connector error); return it."""
    with pytest.raises(Exception) as failure:
        Engine(connector_config(server, db, **tls)).run(lambda records: None)
    assert isinstance(failure.value, (ConnectorError, ConfigError)), repr(failure.value)
    problems = failure.value.problems if isinstance(failure.value, ConfigError) else [str(failure.value)]
    assert len(problems) == 1 and "\n" not in problems[0].strip(), problems
    line = problems[0]
    _assert_no_passphrase("the error", line)
    return line


def test_streams_over_tls_with_a_pkcs12_keystore(tls_server, db, certs, tmp_path):
    config = write_properties(tmp_path / "app.properties", mariadb_properties(tls_server, db, tmp_path, **_tls(certs)))
    cdc = CdcProcess(config, tmp_path, "--log-level", "DEBUG").start()
    topic = f"dbserver1.{db}.items"
    try:
        cdc.wait_events(topic, 1)
        tls_server.execute("INSERT INTO items VALUES (2, 'stream')", db)
        events = cdc.wait_events(topic, 2)
        assert [e["value"]["payload"]["op"] for e in events[:2]] == ["r", "c"]
        dumps = tls_server.execute("SELECT USER FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'")
        assert (USER,) in dumps, dumps  # the binlog connection is the certificate user's
    finally:
        assert cdc.terminate() == 0, cdc.log()
    _assert_no_passphrase("the log", cdc.log())
    for path in tmp_path.rglob("*"):
        if path.is_file() and path != config:
            _assert_no_passphrase(str(path), path.read_bytes())
    for command in (["validate"], ["--log-level", "DEBUG", "validate"]):
        done = run_cli(*command, str(config))
        assert done.returncode == 0, done.stderr
        _assert_no_passphrase(f"`cdc {' '.join(command)}`", done.stdout + done.stderr)


@pytest.mark.parametrize("store", ["jks", "pem"])
def test_streams_with_jks_and_pem_stores(tls_server, db, certs, store):
    if store == "jks" and certs.keystore_jks is None:
        pytest.skip("Java's keytool is not installed: no JKS stores to read")
    engine = EngineThread(connector_config(tls_server, db, **_tls(certs, store))).start()
    try:
        engine.wait(lambda rs: _ids(rs) == [1], "the snapshot row")
        tls_server.execute("INSERT INTO items VALUES (2, 'stream')", db)
        engine.wait(lambda rs: _ids(rs) == [1, 2], "the streamed row")
    finally:
        engine.stop()


def test_without_a_client_certificate_the_user_is_refused_naming_the_keystore(tls_server, db, certs):
    line = _refusal(tls_server, db, certs, **_tls(certs, **{"database.ssl.keystore": None,
                                                            "database.ssl.keystore.password": None}))
    assert "Access denied" in line and "database.ssl.keystore" in line, line


def test_verify_identity_against_another_host_name_fails_clearly(tls_server, db, certs):
    line = _refusal(tls_server, db, certs, **_tls(certs, **{"database.hostname": "127.0.0.1"}))
    assert "database.hostname" in line and "TLS" in line, line
    # verify_ca checks the chain only: the same address is fine.
    engine = EngineThread(connector_config(tls_server, db, **_tls(certs, **{
        "database.hostname": "127.0.0.1", "database.ssl.mode": "verify_ca"}))).start()
    try:
        engine.wait(lambda rs: _ids(rs) == [1], "the snapshot row with verify_ca")
    finally:
        engine.stop()


def test_a_truststore_without_the_servers_ca_fails_clearly(tls_server, db, certs):
    line = _refusal(tls_server, db, certs, **_tls(certs, "pem", **{"database.ssl.truststore": certs.other_ca}))
    assert "database.ssl.truststore" in line, line


def test_wrong_store_passwords_are_configuration_errors_without_the_password(tls_server, db, certs):
    for store in ("pkcs12", "jks", "pem"):
        if store == "jks" and certs.keystore_jks is None:
            continue
        line = _refusal(tls_server, db, certs, **_tls(certs, store, **{"database.ssl.keystore.password": "nope"}))
        assert "database.ssl.keystore.password" in line, (store, line)
    line = _refusal(tls_server, db, certs, **_tls(certs, **{"database.ssl.truststore.password": "nope"}))
    assert "database.ssl.truststore.password" in line, line


def test_unreadable_stores_are_refused_naming_the_property(tls_server, db, certs, tmp_path):
    line = _refusal(tls_server, db, certs, **_tls(certs, **{"database.ssl.keystore": tmp_path / "missing.p12"}))
    assert "database.ssl.keystore" in line and "does not exist" in line, line
    jceks = tmp_path / "store.jceks"
    jceks.write_bytes(b"\xce\xce\xce\xce" + b"\0" * 32)
    line = _refusal(tls_server, db, certs, **_tls(certs, **{"database.ssl.truststore": jceks}))
    assert "database.ssl.truststore" in line and "JCEKS" in line and "PKCS12" in line, line


def test_required_and_preferred_connect_and_disabled_is_refused(tls_server, db, certs):
    # required: encrypted, the server's certificate not checked (127.0.0.1 is not in it, and no CA is given).
    engine = EngineThread(connector_config(tls_server, db, **_tls(certs, **{
        "database.hostname": "127.0.0.1", "database.ssl.mode": "required", "database.ssl.truststore": None,
        "database.ssl.truststore.password": None}))).start()
    try:
        engine.wait(lambda rs: _ids(rs) == [1], "the snapshot row with required")
    finally:
        engine.stop()
    # preferred: TLS because the server offers it, with the key store's certificate.
    engine = EngineThread(connector_config(tls_server, db, **_tls(certs, **{"database.ssl.mode": "preferred"}))).start()
    try:
        engine.wait(lambda rs: _ids(rs) == [1], "the snapshot row with preferred")
    finally:
        engine.stop()
    # disabled: no TLS, so the X509 user is refused.
    line = _refusal(tls_server, db, certs, **_tls(certs, **{"database.ssl.mode": "disabled"}))
    assert "Access denied" in line, line

