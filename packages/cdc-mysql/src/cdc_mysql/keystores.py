"""Java key and trust stores read without Java: PKCS12 (through the ``openssl`` command), JKS (here), PEM.

``database.ssl.keystore`` and ``database.ssl.truststore`` name Java ``KeyStore`` files, as Debezium
(Java's default type, PKCS12, which also reads JKS) loads them. Python's ``ssl`` reads PEM only, so a
store is turned into PEM text in memory: a key store into its private key and certificate chain, a
trust store into its certificates. JKS is simple enough to read here (its certificates are plain DER,
its keys protected by Sun's SHA-1 key protector); PKCS12 needs real ciphers, so the ``openssl``
command line tool decrypts it (the password goes to it in its environment, never on its command line).
JCEKS stores are refused. A file that already is PEM is used as it is.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass, field

_JKS_MAGIC = b"\xfe\xed\xfe\xed"
_JCEKS_MAGIC = b"\xce\xce\xce\xce"
#: Sun's key protector (sun.security.provider.KeyProtector), the only JKS private key encryption.
_SUN_KEY_PROTECTOR_OID = bytes.fromhex("2b060104012a02110101")  # 1.3.6.1.4.1.42.2.17.1.1
_PEM_BLOCK = re.compile(rb"-----BEGIN ([A-Z0-9 ]+)-----\r?\n.*?-----END \1-----", re.S)


class KeyStoreError(Exception):
    """A key or trust store that cannot be read as configured (one line, naming the property)."""


@dataclass
class StoreContents:
    """What a store holds, as PEM text: private key (key stores), certificates (leaf first)."""

    key_pem: bytes | None = None
    cert_pems: list[bytes] = field(default_factory=list)


def store_format(data: bytes) -> str:
    """``jks``, ``jceks``, ``pem`` or ``pkcs12`` (anything else: left to openssl to judge)."""
    if data.startswith(_JKS_MAGIC):
        return "jks"
    if data.startswith(_JCEKS_MAGIC):
        return "jceks"
    if b"-----BEGIN " in data[:4096]:
        return "pem"
    return "pkcs12"


def read_store(path: str, password: str | None, prop: str, password_prop: str, *, keys: bool) -> StoreContents:
    """Read the store at ``path`` (named by property ``prop``); ``keys`` asks for its private key too."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise KeyStoreError(f"{prop}: {path!r} does not exist") from None
    except OSError as e:
        raise KeyStoreError(f"{prop}: cannot read {path!r}: {e.strerror}") from None
    kind = store_format(data)
    if kind == "jceks":
        raise KeyStoreError(f"{prop}: {path!r} is a JCEKS store, which cdc cannot read; convert it to PKCS12 "
                            f"(keytool -importkeystore -srcstoretype JCEKS -deststoretype PKCS12) or PEM")
    if kind == "pem":
        blocks = [(m.group(1).decode(), m.group(0) + b"\n") for m in _PEM_BLOCK.finditer(data)]
        contents = StoreContents(cert_pems=[b for name, b in blocks if name == "CERTIFICATE"])
        contents.key_pem = next((b for name, b in blocks if name.endswith("PRIVATE KEY")), None)
    elif kind == "jks":
        contents = _read_jks(data, password, f"{prop} {path!r}", password_prop, keys)
    else:
        contents = _read_pkcs12(path, password, prop, password_prop, keys)
    if not contents.cert_pems:
        raise KeyStoreError(f"{prop}: {path!r} holds no certificate")
    if keys and contents.key_pem is None:
        raise KeyStoreError(f"{prop}: {path!r} holds no private key (a key store needs the client's key and "
                            "certificate)")
    return contents


# -- PKCS12, through the openssl command ---------------------------------------------------------------

def _read_pkcs12(path: str, password: str | None, prop: str, password_prop: str, keys: bool) -> StoreContents:
    if keys:
        key_out = _openssl_pkcs12(path, password, prop, password_prop, "-nocerts", "-nodes")
        leaf = _openssl_pkcs12(path, password, prop, password_prop, "-nokeys", "-clcerts")
        chain = _openssl_pkcs12(path, password, prop, password_prop, "-nokeys", "-cacerts")
        key = next((m.group(0) + b"\n" for m in _PEM_BLOCK.finditer(key_out) if m.group(1).endswith(b"PRIVATE KEY")),
                   None)
        return StoreContents(key, _certs(leaf) + _certs(chain))
    return StoreContents(None, _certs(_openssl_pkcs12(path, password, prop, password_prop, "-nokeys")))


def _certs(pem: bytes) -> list[bytes]:
    return [m.group(0) + b"\n" for m in _PEM_BLOCK.finditer(pem) if m.group(1) == b"CERTIFICATE"]


def _openssl_pkcs12(path: str, password: str | None, prop: str, password_prop: str, *args: str) -> bytes:
    """``openssl pkcs12 -in path args`` (retried with ``-legacy`` for old RC2/3DES stores); its PEM output."""
    exe = shutil.which("openssl")
    if exe is None:
        raise KeyStoreError(f"{prop}: reading the PKCS12 store {path!r} needs the `openssl` command, which is not "
                            "installed (apt-get install openssl); or give a PEM file")
    env = {"PATH": os.environ.get("PATH", ""), "CDC_STORE_PASSWORD": password or ""}
    error = ""
    for legacy in ((), ("-legacy",)):
        try:
            done = subprocess.run([exe, "pkcs12", "-in", path, "-passin", "env:CDC_STORE_PASSWORD", *args, *legacy],
                                  capture_output=True, env=env, timeout=60, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as e:
            raise KeyStoreError(f"{prop}: cannot run openssl to read {path!r}: {e}") from None
        if done.returncode == 0:
            return done.stdout
        error = done.stderr.decode("utf-8", "replace")
        if "unsupported" not in error.lower() and "legacy" not in error.lower():
            break
    if "mac verify" in error.lower() or "invalid password" in error.lower():
        raise KeyStoreError(f"{password_prop}: does not open {prop} {path!r} (wrong or missing password)")
    first = next((line.strip() for line in error.splitlines() if line.strip()), "unknown error")
    raise KeyStoreError(f"{prop}: {path!r} is neither a PKCS12, JKS nor PEM store that openssl can read: {first}")


# -- JKS ----------------------------------------------------------------------------------------------

class _Reader:
    """Big-endian reads over a JKS file, failing as a damaged store."""

    def __init__(self, data: bytes, prop: str):
        self.data, self.pos, self.prop = data, 0, prop

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise KeyStoreError(f"{self.prop}: the JKS store ends early (damaged file)")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u16(self) -> int:
        return struct.unpack(">H", self.take(2))[0]

    def u32(self) -> int:
        return struct.unpack(">I", self.take(4))[0]

    def utf(self) -> str:
        return self.take(self.u16()).decode("utf-8", "replace")


def _pem(kind: str, der: bytes) -> bytes:
    body = base64.encodebytes(der).decode().replace("\n", "")
    lines = "\n".join(body[i:i + 64] for i in range(0, len(body), 64))
    return f"-----BEGIN {kind}-----\n{lines}\n-----END {kind}-----\n".encode()


def _read_jks(data: bytes, password: str | None, prop: str, password_prop: str, keys: bool) -> StoreContents:
    r = _Reader(data, prop)
    r.take(4)
    version = r.u32()
    if version not in (1, 2):
        raise KeyStoreError(f"{prop}: unknown JKS version {version}")
    key_der: bytes | None = None
    chain: list[bytes] = []
    trusted: list[bytes] = []
    for _ in range(r.u32()):
        tag = r.u32()
        r.utf()  # alias
        r.take(8)  # creation time
        if tag == 1:
            protected = r.take(r.u32())
            certs = []
            for _ in range(r.u32()):
                if version == 2:
                    r.utf()  # certificate type (X.509)
                certs.append(r.take(r.u32()))
            if key_der is None:
                key_der, chain = protected, certs
        elif tag == 2:
            if version == 2:
                r.utf()
            trusted.append(r.take(r.u32()))
        else:
            raise KeyStoreError(f"{prop}: unknown JKS entry type {tag} (a JCEKS secret key?)")
    stored_digest = r.take(20)
    if password:  # as Java: without a password the store is read unchecked
        pw = password.encode("utf-16-be")
        if hashlib.sha1(pw + b"Mighty Aphrodite" + data[:r.pos - 20]).digest() != stored_digest:
            raise KeyStoreError(f"{password_prop}: does not open {prop} (wrong password, or a damaged store)")
    if keys:
        if key_der is None:
            return StoreContents(None, [_pem("CERTIFICATE", c) for c in trusted])
        plain = _unprotect_key(key_der, password or "", prop, password_prop)
        return StoreContents(_pem("PRIVATE KEY", plain), [_pem("CERTIFICATE", c) for c in chain])
    return StoreContents(None, [_pem("CERTIFICATE", c) for c in trusted + chain])


def _der_item(data: bytes, pos: int, prop: str) -> tuple[int, int, int]:
    """(tag, start of content, end of content) of the DER item at ``pos``."""
    if pos + 2 > len(data):
        raise KeyStoreError(f"{prop}: damaged private key in the JKS store")
    tag, length, pos = data[pos], data[pos + 1], pos + 2
    if length & 0x80:
        n = length & 0x7F
        length, pos = int.from_bytes(data[pos:pos + n], "big"), pos + n
    return tag, pos, pos + length


def _unprotect_key(encrypted_info: bytes, password: str, prop: str, password_prop: str) -> bytes:
    """Decrypt a JKS private key (EncryptedPrivateKeyInfo under Sun's key protector) into PKCS#8 DER."""
    _, body, _ = _der_item(encrypted_info, 0, prop)  # SEQUENCE
    _, alg, alg_end = _der_item(encrypted_info, body, prop)  # AlgorithmIdentifier
    _, oid, oid_end = _der_item(encrypted_info, alg, prop)
    if encrypted_info[oid:oid_end] != _SUN_KEY_PROTECTOR_OID:
        raise KeyStoreError(f"{prop}: the JKS private key is protected by an algorithm cdc does not know; convert "
                            "the store to PKCS12 or PEM")
    _, data_start, data_end = _der_item(encrypted_info, alg_end, prop)  # OCTET STRING
    protected = encrypted_info[data_start:data_end]
    salt, cipher, check = protected[:20], protected[20:-20], protected[-20:]
    pw = password.encode("utf-16-be")
    stream = bytearray()
    digest = salt
    while len(stream) < len(cipher):
        digest = hashlib.sha1(pw + digest).digest()
        stream += digest
    plain = bytes(a ^ b for a, b in zip(cipher, stream))
    if hashlib.sha1(pw + plain).digest() != check:
        raise KeyStoreError(f"{password_prop}: does not unlock the private key in {prop} (wrong password)")
    return plain
