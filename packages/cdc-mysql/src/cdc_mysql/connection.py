"""PyMySQL connections for the connector, sharing one TLS context for the server's optional TLS.

``tls_context`` (from ``cdc_mysql.tls``, for ``database.ssl.mode=preferred`` with key or trust stores) is
the context used when the server offers TLS.

PyMySQL tries TLS whenever the server offers it (Debezium's ``database.ssl.mode=preferred``) and
builds a fresh default SSL context for every connection, which loads the system's CA store: tens
of milliseconds per connection, and a connector opens several. Without certificates to check
(``preferred`` verifies nothing), one context serves them all.
"""

from __future__ import annotations

import ssl
import threading
from typing import Any

import pymysql

_lock = threading.Lock()
_preferred: ssl.SSLContext | None = None


def _preferred_context() -> ssl.SSLContext:
    global _preferred
    with _lock:
        if _preferred is None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            _preferred = ctx
        return _preferred


class Connection(pymysql.connections.Connection):
    """A PyMySQL connection whose optional (``preferred``) TLS reuses one context."""

    def __init__(self, *args: Any, tls_context: ssl.SSLContext | None = None, **kwargs: Any) -> None:
        self._cdc_tls_context = tls_context
        super().__init__(*args, **kwargs)

    def hold(self, packet: Any) -> None:
        """Make ``packet``, already read, the next one ``_read_packet`` returns (``cdc_mysql.hot_events`` reads
        a binlog packet to see its type, then leaves an event it does not make to mysql-replication).

        An instance attribute that shadows the method once: the connection's other reads (a snapshot's
        rows, a packet each) keep calling PyMySQL's method directly."""
        def once(packet_type: Any = None) -> Any:
            del self._read_packet
            return packet

        self._read_packet = once  # type: ignore[method-assign]

    def _create_ssl_ctx(self, sslp: Any) -> ssl.SSLContext:
        if not sslp:
            return self._cdc_tls_context or _preferred_context()
        return super()._create_ssl_ctx(sslp)
