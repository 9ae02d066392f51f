"""A minimal Confluent-compatible schema registry for the tests: the endpoints cdc's client and a reader use.

No registry server can be installed on these machines, so the tests run this one (http.server in
a thread, memory only): ``POST /subjects/<s>/versions`` registers (the same schema text gets the
same id in every subject, a new text in a subject a new version), ``POST /subjects/<s>`` looks a
schema up, ``GET /schemas/ids/<id>``, ``GET /subjects``, ``GET /subjects/<s>/versions`` and
``GET /subjects/<s>/versions/<n|latest>`` read back. It checks that a registered schema parses
as Avro (fastavro) as a real registry does, and answers Confluent's error bodies
(``{"error_code": 40401, ...}``). Optional basic auth (``user``/``password``) answers 401 without it.
When ``CDC_TEST_SCHEMA_REGISTRY_URL`` names a real registry, ``registry_url`` returns that instead.
"""

from __future__ import annotations

import base64
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

#: A real Confluent-compatible registry to run the Avro tests against as well, when set.
EXTERNAL_ENV = "CDC_TEST_SCHEMA_REGISTRY_URL"
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class TestSchemaRegistry:
    """The registry's state and its HTTP server on a free port of 127.0.0.1."""

    __test__ = False  # not a test class

    def __init__(self, user: str | None = None, password: str | None = None):
        self.schemas: list[str] = []  # id - 1 -> schema text
        self.subjects: dict[str, list[int]] = {}  # subject -> ids by version
        self.requests: list[tuple[str, str]] = []  # (method, path), for tests counting calls
        self.lock = threading.Lock()
        self.credentials = (user, password) if user is not None else None
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _authorized(self) -> bool:
                if registry.credentials is None:
                    return True
                expected = "Basic " + base64.b64encode(":".join(registry.credentials).encode()).decode()
                if self.headers.get("Authorization") == expected:
                    return True
                self._send(401, {"error_code": 401, "message": "Unauthorized"})
                return False

            def do_GET(self) -> None:  # noqa: N802
                registry.requests.append(("GET", self.path))
                if self._authorized():
                    self._send(*registry.get(self.path))

            def do_POST(self) -> None:  # noqa: N802
                registry.requests.append(("POST", self.path))
                if not self._authorized():
                    return
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._send(422, {"error_code": 42201, "message": "Invalid JSON body"})
                    return
                self._send(*registry.post(self.path, body))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, name="test-schema-registry", daemon=True)

    @property
    def url(self) -> str:
        """The registry's base URL."""
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> TestSchemaRegistry:
        """Serve in a thread."""
        self.thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port."""
        self.server.shutdown()
        self.server.server_close()

    # -- the API --------------------------------------------------------------------------------

    def _register(self, subject: str, text: str) -> int:
        with self.lock:
            if text in self.schemas:
                schema_id = self.schemas.index(text) + 1
            else:
                self.schemas.append(text)
                schema_id = len(self.schemas)
            versions = self.subjects.setdefault(subject, [])
            if schema_id not in versions:
                versions.append(schema_id)
            return schema_id

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        """``POST /subjects/<s>/versions`` (register) and ``POST /subjects/<s>`` (look up)."""
        parts = [unquote(p) for p in path.strip("/").split("/")]
        text = body.get("schema")
        if body.get("schemaType", "AVRO") != "AVRO" or not isinstance(text, str):
            return 422, {"error_code": 42201, "message": "Either the input schema or one of its references is invalid"}
        try:
            from fastavro import parse_schema

            parse_schema(json.loads(text))
        except Exception as e:  # noqa: BLE001 - any parse failure is the registry's 422
            return 422, {"error_code": 42201, "message": f"Invalid schema: {e}"}
        if len(parts) == 3 and parts[0] == "subjects" and parts[2] == "versions":
            return 200, {"id": self._register(parts[1], text)}
        if len(parts) == 2 and parts[0] == "subjects":
            versions = self.subjects.get(parts[1])
            if versions is None:
                return 404, {"error_code": 40401, "message": f"Subject '{parts[1]}' not found."}
            for number, schema_id in enumerate(versions, 1):
                if self.schemas[schema_id - 1] == text:
                    return 200, {"subject": parts[1], "version": number, "id": schema_id, "schema": text}
            return 404, {"error_code": 40403, "message": "Schema not found"}
        return 404, {"error_code": 404, "message": "HTTP 404 Not Found"}

    def get(self, path: str) -> tuple[int, Any]:
        """The read endpoints."""
        parts = [unquote(p) for p in path.strip("/").split("/")]
        if len(parts) == 3 and parts[:2] == ["schemas", "ids"] and parts[2].isdigit():
            i = int(parts[2])
            if 1 <= i <= len(self.schemas):
                return 200, {"schema": self.schemas[i - 1]}
            return 404, {"error_code": 40403, "message": "Schema not found"}
        if parts == ["subjects"]:
            return 200, sorted(self.subjects)
        if len(parts) >= 3 and parts[0] == "subjects" and parts[2] == "versions":
            versions = self.subjects.get(parts[1])
            if versions is None:
                return 404, {"error_code": 40401, "message": f"Subject '{parts[1]}' not found."}
            if len(parts) == 3:
                return 200, list(range(1, len(versions) + 1))
            number = len(versions) if parts[3] == "latest" else int(parts[3]) if parts[3].isdigit() else 0
            if not 1 <= number <= len(versions):
                return 404, {"error_code": 40402, "message": "Version not found."}
            schema_id = versions[number - 1]
            return 200, {"subject": parts[1], "version": number, "id": schema_id, "schema": self.schemas[schema_id - 1]}
        return 404, {"error_code": 404, "message": "HTTP 404 Not Found"}


def external_registry_url() -> str | None:
    """The real registry named by ``CDC_TEST_SCHEMA_REGISTRY_URL``, if any."""
    return os.environ.get(EXTERNAL_ENV) or None


def fetch_schema(url: str, schema_id: int) -> Any:
    """The parsed Avro schema of ``schema_id`` from the registry at ``url`` (any registry)."""
    import httpx

    response = httpx.get(f"{url.rstrip('/')}/schemas/ids/{schema_id}", timeout=30)
    response.raise_for_status()
    return json.loads(response.json()["schema"])
