"""The schema history store a historized connector uses: the engine's, else the configured one.

``schema.history.internal`` names the store; ``file`` without a file name (and ``memory``) is kept in
memory per engine Config, so a retry of the same engine (same Config) keeps its history; an entry
goes when its Config is collected, so a reused id never finds another's history.
"""

from __future__ import annotations

import weakref
from typing import Any

from cdc_core.config import Config, common

_MEMORY_HISTORIES: dict[int, Any] = {}


def memory_history(config: Config) -> Any:
    """The in-memory schema history store of one engine's Config (created on first use)."""
    key = id(config)
    store = _MEMORY_HISTORIES.get(key)
    if store is None:
        from cdc_core.stores.memory_history import MemorySchemaHistoryStore

        store = _MEMORY_HISTORIES[key] = MemorySchemaHistoryStore()
        weakref.finalize(config, _MEMORY_HISTORIES.pop, key, None)
    return store


def history_store(config: Config, given: Any) -> Any:
    """``given`` (the engine's store) if there is one, else ``schema.history.internal``'s store (``cdc run``: the
    file; memory without a file name)."""
    if given is not None:
        return given
    from cdc_core.plugins import registry  # here: the plugins' registry loads the stores

    cls = registry().get("schema history store", config.get(common.SCHEMA_HISTORY))
    if cls.name == "memory" or (cls.name == "file" and not config.get(common.SCHEMA_HISTORY_FILE)):
        return memory_history(config)
    return cls(config)
