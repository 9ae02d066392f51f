"""The kit's pytest fixtures (loaded by the root conftest): ``connector``, one per entry of ``kit.FIXTURES``; ``small_disk``."""

from __future__ import annotations

import importlib
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kit import FIXTURES
from kit.contract import ConnectorFixture


@pytest.fixture(params=sorted(FIXTURES))
def connector(request: pytest.FixtureRequest) -> Iterator[Any]:
    """One connector's fixture on its session server and a fresh database (its server starts on first use)."""
    module, cls, server_fixture, db_fixture = FIXTURES[request.param]
    fixture = getattr(importlib.import_module(module), cls)(request.getfixturevalue(server_fixture),
                                                            request.getfixturevalue(db_fixture))
    assert isinstance(fixture, ConnectorFixture)
    try:
        yield fixture
    finally:
        close = getattr(fixture, "close", None)
        if close is not None:
            close()


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs mounted at ``tmp_path/events`` (the kit's file sink directory; needs root and ``mount``)."""
    mountpoint = tmp_path / "events"
    mountpoint.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mountpoint)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill (needs root): {done.stderr.decode().strip()}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], check=False)
