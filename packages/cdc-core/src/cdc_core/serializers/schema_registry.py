"""A client of the Confluent Schema Registry REST API: register a subject's schema, get its id.

Only the calls Confluent's AvroConverter makes while writing: ``POST /subjects/<subject>/versions``
(register; the registry answers the existing id for a schema it already has) and, with
``auto.register.schemas=false``, ``POST /subjects/<subject>`` (look the schema up). Ids are cached
per (subject, schema text), so each schema costs one request per process. Several URLs
(comma-separated) are tried in turn when one cannot be reached. Credentials
(``basic.auth.user.info`` or ``user:password@`` in the URL) are sent as HTTP basic auth and never
appear in an error message. httpx is imported only when a registry is used.
"""

from __future__ import annotations

import threading
from typing import Any
from urllib.parse import urlsplit, urlunsplit, quote

from cdc_core.errors import CdcError

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class SchemaRegistryError(CdcError):
    """The schema registry refused a schema or could not be reached."""


def _without_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """The URL with any ``user:password@`` removed, and those credentials."""
    parts = urlsplit(url.strip())
    if parts.username is None:
        return url.strip().rstrip("/"), None
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    clean = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)).rstrip("/")
    return clean, (parts.username, parts.password or "")


class SchemaRegistryClient:
    """Registers schemas under subjects and caches their ids (thread-safe)."""

    def __init__(self, urls: str | list[str], *, user_info: str | None = None, timeout: float = 30.0,
                 auto_register: bool = True):
        raw = urls.split(",") if isinstance(urls, str) else list(urls)
        self.urls: list[str] = []
        auth = None
        for u in raw:
            if u.strip():
                clean, creds = _without_credentials(u)
                self.urls.append(clean)
                auth = auth or creds
        if not self.urls:
            raise SchemaRegistryError("no schema registry URL is configured")
        if user_info:
            user, _, password = user_info.partition(":")
            auth = (user, password)
        self._auth = auth
        self.timeout = timeout
        self.auto_register = auto_register
        self._ids: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        self._client: Any = None

    def _http(self) -> Any:
        if self._client is None:
            import httpx

            self._client = httpx.Client(timeout=self.timeout, auth=self._auth,
                                        headers={"Content-Type": CONTENT_TYPE, "Accept": CONTENT_TYPE})
        return self._client

    def id_for(self, subject: str, schema: str) -> int:
        """The registry's id of ``schema`` (Avro JSON text) under ``subject``, registering it if allowed."""
        key = (subject, schema)
        found = self._ids.get(key)
        if found is not None:
            return found
        with self._lock:
            found = self._ids.get(key)
            if found is None:
                path = f"/subjects/{quote(subject, safe='')}"
                if self.auto_register:
                    path += "/versions"
                body = self._post(path, {"schema": schema}, subject)
                try:
                    found = int(body["id"])
                except (KeyError, TypeError, ValueError):
                    raise SchemaRegistryError(f"schema registry answered no id for subject {subject!r}: {body!r}") from None
                self._ids[key] = found
        return found

    def _post(self, path: str, payload: dict[str, Any], subject: str) -> Any:
        import httpx

        failures = []
        for base in self.urls:
            try:
                response = self._http().post(base + path, json=payload)
            except httpx.HTTPError as e:
                failures.append(f"{base}: {type(e).__name__}: {e}")
                continue
            if response.status_code >= 400:
                raise SchemaRegistryError(self._refusal(base, subject, response))
            try:
                return response.json()
            except ValueError:
                raise SchemaRegistryError(f"schema registry {base} answered {response.status_code} "
                                          f"with no JSON for subject {subject!r}") from None
        raise SchemaRegistryError(f"schema registry cannot be reached for subject {subject!r}: " + "; ".join(failures))

    def _refusal(self, base: str, subject: str, response: Any) -> str:
        try:
            body = response.json()
            detail = f"error {body.get('error_code')}: {body.get('message')}"
        except ValueError:
            detail = response.text[:200]
        if response.status_code == 404 and not self.auto_register:
            return (f"schema registry {base} has no such schema under subject {subject!r} and auto.register.schemas "
                    f"is false ({detail})")
        if response.status_code == 409:
            return f"schema registry {base} refused the schema of subject {subject!r} as incompatible ({detail})"
        if response.status_code in (401, 403):
            return f"schema registry {base} refused the credentials ({response.status_code}) for subject {subject!r}"
        return f"schema registry {base} refused subject {subject!r}: HTTP {response.status_code} ({detail})"

    def close(self) -> None:
        """Close the HTTP connections."""
        if self._client is not None:
            self._client.close()
            self._client = None
