"""``database.ssl.*`` as one ``ssl.SSLContext`` shared by every MySQL/MariaDB connection of a connector.

The binlog connection, the snapshot and incremental-snapshot connections all connect through
``cdc_mysql.config.connect_args``, which hands PyMySQL the context built here:

- ``disabled``: no TLS. ``preferred``: TLS when the server offers it; ``required``: TLS or fail.
  Neither checks the server's certificate unless a trust store is given (as Debezium's binlog
  connection, which checks against ``database.ssl.truststore`` whenever one is set).
- ``verify_ca``: the server's certificate must chain to the trust store (or to the system's CAs
  when none is given); ``verify_identity``: and name the host in ``database.hostname``.
- ``database.ssl.keystore``: the client's key and certificate (two-way TLS, for users that must
  present a certificate, ``REQUIRE X509``); PKCS12, JKS or PEM (``cdc_mysql.keystores``).
"""

from __future__ import annotations

import functools
import os
import shutil
import ssl
import tempfile
from typing import Any

from cdc_core.config import Config
from cdc_mysql.keystores import KeyStoreError, read_store

__all__ = ["KeyStoreError", "context", "problems", "refusal"]

KEYSTORE, KEYSTORE_PASSWORD = "database.ssl.keystore", "database.ssl.keystore.password"
TRUSTSTORE, TRUSTSTORE_PASSWORD = "database.ssl.truststore", "database.ssl.truststore.password"


def context(config: Config) -> ssl.SSLContext | None:
    """The TLS context for ``config`` (None for ``disabled``); raises KeyStoreError for an unreadable store."""
    mode = config.get("database.ssl.mode")
    if mode == "disabled":
        return None
    keystore, truststore = (str(config.get(p)) if config.get(p) else None for p in (KEYSTORE, TRUSTSTORE))
    stamp = tuple(_mtime(p) for p in (keystore, truststore))
    return _build(mode, keystore, config.get(KEYSTORE_PASSWORD) or None, truststore,
                  config.get(TRUSTSTORE_PASSWORD) or None, stamp)


def problems(config: Config) -> list[str]:
    """The stores' problems, as configuration problems (checked before the connector starts)."""
    try:
        context(config)
    except KeyStoreError as e:
        return [str(e)]
    return []


def refusal(error: BaseException) -> str | None:
    """The properties to check when a connection failed in its TLS handshake (None: not a TLS failure)."""
    text = str(error)
    if "CERTIFICATE_VERIFY_FAILED" in text and ("Hostname mismatch" in text or "IP address mismatch" in text):
        return ("database.hostname (verify_identity checks it against the server's certificate) and "
                "database.ssl.mode")
    if "CERTIFICATE_VERIFY_FAILED" in text:
        return "database.ssl.truststore (the CA that signed the server's certificate) and database.ssl.mode"
    if "SSL" in text and ("alert" in text.lower() or "handshake" in text.lower() or "WRONG_VERSION" in text):
        return "database.ssl.mode, database.ssl.keystore and the server's TLS setup"
    return None


def _mtime(path: str | None) -> float | None:
    try:
        return os.stat(path).st_mtime if path else None
    except OSError:
        return None


@functools.lru_cache(maxsize=8)
def _build(mode: str, keystore: str | None, keystore_password: str | None, truststore: str | None,
           truststore_password: str | None, _stamp: Any) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    if truststore:
        trusted = read_store(truststore, truststore_password, TRUSTSTORE, TRUSTSTORE_PASSWORD, keys=False)
        try:
            ctx.load_verify_locations(cadata="".join(pem.decode("ascii") for pem in trusted.cert_pems))
        except (ssl.SSLError, ValueError) as e:
            raise KeyStoreError(f"{TRUSTSTORE}: {truststore!r} holds a certificate OpenSSL cannot use: {e}") from None
        ctx.verify_mode = ssl.CERT_REQUIRED
    elif mode in ("verify_ca", "verify_identity"):
        ctx.load_default_certs()
        ctx.verify_mode = ssl.CERT_REQUIRED
    else:
        ctx.verify_mode = ssl.CERT_NONE
    ctx.check_hostname = mode == "verify_identity"
    if keystore:
        own = read_store(keystore, keystore_password, KEYSTORE, KEYSTORE_PASSWORD, keys=True)
        assert own.key_pem is not None
        _load_chain(ctx, b"".join(own.cert_pems) + own.key_pem, keystore, keystore_password)
    return ctx


def _load_chain(ctx: ssl.SSLContext, pem: bytes, keystore: str, password: str | None) -> None:
    """Load a client key and chain from memory (an anonymous memory file; a private temporary file elsewhere)."""
    secret = (password or "").encode("utf-8")
    tmpdir = None
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("cdc-tls", getattr(os, "MFD_CLOEXEC", 0))
        path = f"/proc/self/fd/{fd}"
    else:  # pragma: no cover - not Linux
        tmpdir = tempfile.mkdtemp(prefix="cdc-tls-")
        path = os.path.join(tmpdir, "client.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, pem)
        # A callable, never None: OpenSSL would otherwise ask for an encrypted key's passphrase on the terminal.
        ctx.load_cert_chain(path, password=lambda: secret)
    except ssl.SSLError as e:
        if "BAD_DECRYPT" in str(e) or "bad decrypt" in str(e) or "PEM lib" in str(e):
            raise KeyStoreError(f"{KEYSTORE_PASSWORD}: does not unlock the private key in {KEYSTORE} "
                                f"{keystore!r}") from None
        raise KeyStoreError(f"{KEYSTORE}: {keystore!r} holds a key and certificate OpenSSL cannot use together: "
                            f"{e.reason or e}") from None
    finally:
        os.close(fd)
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)
