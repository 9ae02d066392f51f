"""Shared fixtures of the cdc-core tests: the memory connector on the path, logging left as found."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

# Tests import the memory connector as a plain module (pytest runs with --import-mode=importlib).
sys.path.insert(0, str(Path(__file__).parent))

DATA = Path(__file__).parent / "data"


@pytest.fixture
def restore_logging():
    """Put back the root logger's handlers and level (``cdc.cli.main`` configures logging)."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
