"""Certificates for the TLS tests, made with the ``openssl`` command: a CA, a server and a client certificate.

The server certificate names ``localhost`` only (so ``127.0.0.1`` is a wrong host name for verify-full /
verify_identity); the client certificate's CN is the database user it logs in as. The client key exists
in the clear and encrypted with ``PASSPHRASE``; key and trust stores are written as PKCS12 (and as JKS
when Java's ``keytool`` is installed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

#: The client key's passphrase and the stores' password: distinctive, so a leak is found by a grep.
PASSPHRASE = "Tls7-walrus-PASSPHRASE-q3"
_EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]


@dataclass
class Certs:
    """Paths of everything ``make_certs`` wrote."""

    dir: Path
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    client_key_encrypted: Path
    other_ca: Path
    keystore_p12: Path
    truststore_p12: Path
    keystore_jks: Path | None = None
    truststore_jks: Path | None = None


def _openssl(*args: str | Path) -> None:
    env = {**os.environ, "CDC_TEST_PASS": PASSPHRASE}
    done = subprocess.run(["openssl", *map(str, args)], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, f"openssl {' '.join(map(str, args))}: {done.stderr}"


def _keytool(*args: str | Path) -> None:
    done = subprocess.run(["keytool", *map(str, args)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"keytool {' '.join(map(str, args))}: {done.stdout}{done.stderr}"


def _ca(d: Path, name: str) -> tuple[Path, Path]:
    cert, key = d / f"{name}.crt", d / f"{name}.key"
    _openssl("req", "-x509", *_EC, "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", f"/CN={name}",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    return cert, key


def _leaf(d: Path, name: str, cn: str, ca: tuple[Path, Path], *extensions: str) -> tuple[Path, Path]:
    cert, key = d / f"{name}.crt", d / f"{name}.key"
    ext: list[str] = []
    for e in extensions:
        ext += ["-addext", e]
    _openssl("req", "-x509", *_EC, "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", f"/CN={cn}",
             "-CA", ca[0], "-CAkey", ca[1], "-addext", "basicConstraints=critical,CA:FALSE", *ext)
    os.chmod(key, 0o600)
    return cert, key


def make_certs(d: Path, client_user: str, *, jks: bool = False) -> Certs:
    """A CA, a server certificate for ``localhost``, a client certificate for ``client_user``, and stores."""
    d.mkdir(parents=True, exist_ok=True)
    ca = _ca(d, "cdc-test-ca")
    other_ca, _ = _ca(d, "other-ca")
    server = _leaf(d, "server", "localhost", ca, "subjectAltName=DNS:localhost", "extendedKeyUsage=serverAuth")
    client = _leaf(d, "client", client_user, ca, "extendedKeyUsage=clientAuth")
    encrypted = d / "client-encrypted.key"
    _openssl("pkey", "-in", client[1], "-aes256", "-passout", "env:CDC_TEST_PASS", "-out", encrypted)
    os.chmod(encrypted, 0o600)
    keystore, truststore = d / "keystore.p12", d / "truststore.p12"
    _openssl("pkcs12", "-export", "-in", client[0], "-inkey", client[1], "-certfile", ca[0], "-name", "cdc",
             "-passout", "env:CDC_TEST_PASS", "-out", keystore)
    _openssl("pkcs12", "-export", "-nokeys", "-in", ca[0], "-passout", "env:CDC_TEST_PASS", "-out", truststore)
    certs = Certs(d, ca[0], server[0], server[1], client[0], client[1], encrypted, other_ca, keystore, truststore)
    if jks and shutil.which("keytool"):
        certs.keystore_jks, certs.truststore_jks = d / "keystore.jks", d / "truststore.jks"
        _keytool("-importkeystore", "-srckeystore", keystore, "-srcstoretype", "PKCS12", "-srcstorepass", PASSPHRASE,
                 "-destkeystore", certs.keystore_jks, "-deststoretype", "JKS", "-deststorepass", PASSPHRASE,
                 "-noprompt")
        _keytool("-importcert", "-alias", "ca", "-file", ca[0], "-keystore", certs.truststore_jks,
                 "-storetype", "JKS", "-storepass", PASSPHRASE, "-noprompt")
    return certs
