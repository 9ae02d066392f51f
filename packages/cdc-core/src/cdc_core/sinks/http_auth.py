"""The HTTP sink's authentication (``debezium.sink.http.authentication.type``): Debezium Server's ``jwt`` and ``standard-webhooks``."""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import time
from typing import Any, ClassVar

import orjson

from cdc_core.config import Config, ConfigField, Fields
from cdc_core.errors import ConfigError, SinkError

F = ConfigField
AUTH_TYPE = F("authentication.type", "enum", None, allowed=("jwt", "standard-webhooks"),
              doc="jwt or standard-webhooks; unset: no authentication.")
JWT_USERNAME = F("authentication.jwt.username", "string", doc="The JWT service's user.")
JWT_PASSWORD = F("authentication.jwt.password", "password", doc="The JWT service's password.")
JWT_URL = F("authentication.jwt.url", "string", doc="Base URL of the JWT service (auth/authenticate is appended).")
JWT_TOKEN_EXPIRATION = F("authentication.jwt.token_expiration", "long", 60, minimum=1,
                         doc="Token lifetime asked for, in minutes.")
JWT_REFRESH_EXPIRATION = F("authentication.jwt.refresh_token_expiration", "long", 1440, minimum=1,
                           doc="Refresh token lifetime asked for, in minutes.")
WEBHOOK_SECRET = F("authentication.webhook.secret", "password",
                   doc="standard-webhooks signing secret (base64, optionally prefixed whsec_).")

AUTH_FIELDS = [AUTH_TYPE, JWT_USERNAME, JWT_PASSWORD, JWT_URL, JWT_TOKEN_EXPIRATION, JWT_REFRESH_EXPIRATION,
               WEBHOOK_SECRET]
PREFIX = "debezium.sink.http."

log = logging.getLogger("cdc.sinks.http")


class JwtAuthenticator:
    """Debezium Server's JWT flow: POST credentials to ``<url>auth/authenticate``, refresh at ``<url>auth/refreshToken``.

    Requests carry ``Authorization: Bearer: <jwt>`` (Debezium Server's spelling); the token is
    renewed when 90% of its ``expires_in`` (milliseconds) has passed.
    """

    kind: ClassVar[str] = "jwt"

    def __init__(self, config: Config, timeout_s: float):
        missing = [f"{PREFIX}{f.name}: is required with authentication.type=jwt"
                   for f in (JWT_USERNAME, JWT_PASSWORD, JWT_URL) if not config.get(f)]
        if missing:
            raise ConfigError(missing)
        self.username = config.get(JWT_USERNAME)
        self._password = config.get(JWT_PASSWORD)
        base = config.get(JWT_URL)
        self.auth_url, self.refresh_url = base + "auth/authenticate", base + "auth/refreshToken"
        self.token_minutes = config.get(JWT_TOKEN_EXPIRATION)
        self.refresh_minutes = config.get(JWT_REFRESH_EXPIRATION)
        self.timeout_s = timeout_s
        self._jwt: str | None = None
        self._refresh: str | None = None
        self._expires_at = 0.0

    def _request(self, client: Any, url: str, body: dict[str, Any]) -> None:
        """POST to the JWT service and keep the token it answers with."""
        import httpx

        try:
            r = client.post(url, content=orjson.dumps(body), headers={"content-type": "application/json"},
                            timeout=self.timeout_s)
        except httpx.HTTPError as e:
            from cdc_core.sinks.retry import TransientSinkError

            raise TransientSinkError(f"JWT service {_safe_url(url)} is unreachable: {type(e).__name__}") from None
        if r.status_code != 200:
            raise SinkError(f"http sink: the JWT service {_safe_url(url)} answered {r.status_code}: check "
                            f"{PREFIX}authentication.jwt.username and {PREFIX}authentication.jwt.password")
        try:
            doc = orjson.loads(r.content)
            self._jwt, self._refresh = str(doc["jwt"]), doc.get("jwt_refresh_token")
            expires_ms = float(doc["expires_in"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            raise SinkError(f"http sink: the JWT service {_safe_url(url)} answered with no usable token ({e})") from None
        self._expires_at = time.monotonic() + 0.9 * expires_ms / 1000.0

    def headers(self, client: Any, body: bytes, message_id: str) -> dict[str, str]:
        """Authenticate (or refresh) if needed; the Authorization header."""
        if self._jwt is None:
            self._request(client, self.auth_url, {
                "username": self.username, "password": self._password,
                "token_expiry_in_minutes": self.token_minutes,
                "refresh_token_expiry_in_minutes": self.refresh_minutes})
        elif time.monotonic() >= self._expires_at:
            if self._refresh:
                self._request(client, self.refresh_url, {
                    "jwt_refresh_token": self._refresh, "token_expiry_in_minutes": self.token_minutes,
                    "refresh_token_expiry_in_minutes": self.refresh_minutes})
            else:
                self._jwt = None
                return self.headers(client, body, message_id)
        return {"Authorization": f"Bearer: {self._jwt}"}


class StandardWebhooksAuthenticator:
    """Signs each request as https://www.standardwebhooks.com says (``webhook-id``, ``-timestamp``, ``-signature``)."""

    kind: ClassVar[str] = "standard-webhooks"

    def __init__(self, config: Config):
        secret = config.get(WEBHOOK_SECRET)
        if not secret:
            raise ConfigError([f"{PREFIX}{WEBHOOK_SECRET.name}: is required with authentication.type=standard-webhooks"])
        secret = secret.removeprefix("whsec_")
        try:
            key = base64.b64decode(secret, validate=True)
        except ValueError:
            raise ConfigError([f"{PREFIX}{WEBHOOK_SECRET.name}: is not base64"]) from None
        if not 24 <= len(key) <= 64:
            raise ConfigError([f"{PREFIX}{WEBHOOK_SECRET.name}: must be 24 to 64 bytes (base64-encoded)"])
        self._key = key

    def headers(self, client: Any, body: bytes, message_id: str) -> dict[str, str]:
        """The three signature headers for this body."""
        msg_id, ts = f"msg_{message_id}", str(int(time.time()))
        mac = hmac.new(self._key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
        return {"webhook-id": msg_id, "webhook-timestamp": ts,
                "webhook-signature": "v1," + base64.b64encode(mac).decode()}


def authenticator(config: Config, timeout_s: float) -> Any:
    """The configured authenticator, or None."""
    kind = config.get(AUTH_TYPE)
    if kind == "jwt":
        return JwtAuthenticator(config, timeout_s)
    if kind == "standard-webhooks":
        return StandardWebhooksAuthenticator(config)
    return None


def auth_fields() -> Fields:
    """Every authentication property (under ``debezium.sink.http.``)."""
    return Fields(AUTH_FIELDS)


def _safe_url(url: str) -> str:
    """``url`` without user info, query or fragment (they may hold credentials)."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid URL>"
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))
