"""Whether a Docker engine answers here, for tests that start a real server with testcontainers."""

from __future__ import annotations

import os


def docker_problem(env_var: str, what: str) -> str | None:
    """Why no container can be started here (naming ``env_var``, the other way to reach ``what``), or None."""
    try:
        import docker

        docker.from_env().ping()
    except Exception as e:  # noqa: BLE001 - any failure means no engine to talk to
        where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        detail = (str(e).strip().splitlines() or [type(e).__name__])[0]
        return f"no Docker engine at {where} ({detail}), and {env_var} is not set: the {what} tests need one of them"
    return None
