"""The HTTP sink: Debezium Server's ``http`` sink (``HttpChangeConsumer``), one POST per record.

The body is the record's value (``content-type: application/json``); each header becomes
``<headers.prefix><NAME>`` (its value base64-encoded unless ``headers.encode.base64=false``);
records without a value (tombstones) are skipped, as Debezium Server does. One persistent
connection (httpx) is kept. A 2xx answer acknowledges the record; 429, 5xx, timeouts and
connection failures are retried every ``retry.interval.ms``, ``retries`` attempts in all, after
which the batch fails unacknowledged (its records come again after a restart); any other status
stops at once with an error naming the URL (without credentials) and the status.
"""

from __future__ import annotations

import base64
import logging
import os
import threading
import uuid
from typing import Any, ClassVar

from cdc_core.config import Config, ConfigField, Fields
from cdc_core.errors import SinkError
from cdc_core.sinks.http_auth import AUTH_FIELDS, _safe_url, authenticator
from cdc_core.sinks.retry import Backoff, TransientSinkError
from cdc_core.spi.sink import SinkRecord

F = ConfigField
URL = F("url", "string", allow_blank=False, doc="The webhook URL (the K_SINK environment variable overrides it).",
        validator=lambda v: None if v.strip().lower().startswith(("http://", "https://"))
        else f"{_safe_url(v)!r} is not an http:// or https:// URL")
TIMEOUT_MS = F("timeout.ms", "long", 60000, minimum=1, doc="Timeout of each request.")
RETRIES = F("retries", "int", 5, minimum=1, doc="Attempts per record before the batch fails.")
RETRY_INTERVAL_MS = F("retry.interval.ms", "long", 1000, minimum=0, doc="Pause between attempts.")
HEADERS_PREFIX = F("headers.prefix", "string", "X-DEBEZIUM-", doc="Prefix of the header names.")
HEADERS_BASE64 = F("headers.encode.base64", "boolean", True, doc="Base64-encode header values.")
PREFIX = "debezium.sink.http."
#: Knative's SinkBinding puts the sink's URL here; Debezium Server prefers it to ``url``.
K_SINK = "K_SINK"

log = logging.getLogger("cdc.sinks.http")


def _header_text(value: Any) -> str:
    """A header value as text: a string as is, anything else as JSON."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, str):
        return value
    import orjson

    return orjson.dumps(value).decode()


class HttpSink:
    """POSTs each record's value to ``debezium.sink.http.url``; see the module docstring."""

    name: ClassVar[str] = "http"
    fields: ClassVar[Fields] = Fields([URL, TIMEOUT_MS, RETRIES, RETRY_INTERVAL_MS, HEADERS_PREFIX, HEADERS_BASE64,
                                       *AUTH_FIELDS])

    def __init__(self, config: Config):
        config.validate(self.fields)
        url = os.environ.get(K_SINK) or config.get(URL)
        if not url:
            raise SinkError(f"{PREFIX}url: is required (or the {K_SINK} environment variable)")
        self.url = url
        self.shown_url = _safe_url(url)
        if not self.shown_url.startswith(("http://", "https://")):
            raise SinkError(f"{PREFIX}url: {self.shown_url!r} is not an http:// or https:// URL")
        self.timeout_s = config.get(TIMEOUT_MS) / 1000.0
        self.headers_prefix = config.get(HEADERS_PREFIX)
        self.base64 = config.get(HEADERS_BASE64)
        self._auth = authenticator(config, self.timeout_s)
        self._stopping = threading.Event()
        interval = config.get(RETRY_INTERVAL_MS)
        self._backoff = Backoff("http sink", log, interval, interval, config.get(RETRIES) - 1,
                                self._stopping)
        try:
            import httpx
        except ImportError:
            raise SinkError("http sink: needs httpx: pip install 'cdc-core[http]'") from None
        # httpx logs each request's full URL at INFO: it may hold credentials (user info, a token in the query).
        for name in ("httpx", "httpcore"):
            if logging.getLogger(name).getEffectiveLevel() < logging.WARNING:
                logging.getLogger(name).setLevel(logging.WARNING)
        self._client = httpx.Client(timeout=self.timeout_s, headers={"content-type": "application/json"})

    def _headers(self, r: SinkRecord) -> dict[str, str]:
        """The record's headers as HTTP headers (``headers.prefix``, upper-cased, base64 if so configured)."""
        out = {}
        for name, value in r.headers.items():
            text = _header_text(value)
            if self.base64:
                text = base64.b64encode(text.encode("utf-8")).decode("ascii")
            out[self.headers_prefix + name.upper()] = text
        return out

    def _post(self, body: bytes, headers: dict[str, str], message_id: str) -> None:
        """One POST; returns on 2xx, raises TransientSinkError (retry) or SinkError (stop) otherwise."""
        import httpx

        if self._auth is not None:
            headers = {**headers, **self._auth.headers(self._client, body, message_id)}
        try:
            response = self._client.post(self.url, content=body, headers=headers)
        except httpx.HTTPError as e:
            raise TransientSinkError(f"POST {self.shown_url} failed: {type(e).__name__}"
                                     f"{': ' + _first_line(e) if _first_line(e) else ''}") from None
        status = response.status_code
        if 200 <= status < 300:
            return
        what = f"POST {self.shown_url} answered {status} {response.reason_phrase}".rstrip()
        if status == 429 or status >= 500:
            raise TransientSinkError(what)
        what = f"http sink: {what}"
        if status in (401, 403, 407):
            hint = (f"check {PREFIX}authentication.*" if self._auth is not None
                    else f"the endpoint wants authentication: set {PREFIX}authentication.type")
            raise SinkError(f"{what}: {hint}")
        raise SinkError(f"{what}: the record is refused, not retried ({PREFIX}url)")

    def write(self, batch: list[SinkRecord]) -> None:
        """POST each record with a value, in order; return once every one is answered 2xx."""
        for r in batch:
            if r.value is None:
                continue
            headers, message_id = self._headers(r), str(uuid.uuid4())
            self._backoff.call(lambda: self._post(r.value, headers, message_id))

    def stop(self) -> None:
        """Cut a retry wait short (the engine is stopping): the batch fails unacknowledged."""
        self._stopping.set()

    def close(self) -> None:
        """Close the connection."""
        self._client.close()


def _first_line(e: BaseException) -> str:
    """The first line of an exception's message (at most 200 characters)."""
    text = str(e)
    return text.splitlines()[0][:200] if text else ""
