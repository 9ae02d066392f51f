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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect a connector's scenarios outside the kit modules its fixture class lists in ``scenarios`` (if any)."""
    keep, dropped = [], []
    for item in items:
        name = getattr(getattr(item, "callspec", None), "params", {}).get("connector")
        entry = FIXTURES.get(name) if isinstance(name, str) else None
        scenarios = getattr(importlib.import_module(entry[0]), entry[1]).__dict__.get("scenarios") if entry else None
        module = item.module.__name__.rpartition(".")[2] if getattr(item, "module", None) else ""
        (dropped if scenarios is not None and module not in scenarios else keep).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


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
