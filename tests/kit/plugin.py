"""The ``connector`` pytest fixture: a ``ConnectorFixture`` per entry of ``kit.FIXTURES`` (loaded by the root conftest)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
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
