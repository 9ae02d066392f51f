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
