"""Choosing the Snapshotter, SnapshotQuery and SnapshotLock a configuration names.

Built-in modes register through the same hooks as third-party ones (``cdc_core.builtins``), so a
mode name is looked up in the plugin registry either way; ``custom`` means "use the name in the
``*.custom.name`` property".
"""

from __future__ import annotations

from typing import Any

from cdc_core.config import Config
from cdc_core.errors import ConfigError, PluginError


def _pick(kind: str, mode_property: str, mode: str, custom_property: str, config: Config, plugins: Any):
    name, prop = mode, mode_property
    if mode == "custom":
        name, prop = config.get(custom_property), custom_property
        if not name:
            raise ConfigError([f"{custom_property}: is required when {mode_property}=custom"])
    try:
        cls = plugins.get(kind, name)
    except PluginError as e:
        raise ConfigError([f"{prop}: {e}"]) from None
    instance = cls()
    instance.configure(config)
    return instance


def snapshotter(config: Config, mode: str, plugins: Any):
    """The Snapshotter for ``snapshot.mode`` (``custom``: ``snapshot.mode.custom.name``)."""
    return _pick("snapshotter", "snapshot.mode", mode, "snapshot.mode.custom.name", config, plugins)


def snapshot_query(config: Config, mode: str, plugins: Any):
    """The SnapshotQuery for ``snapshot.query.mode``."""
    return _pick("snapshot query", "snapshot.query.mode", mode, "snapshot.query.mode.custom.name", config, plugins)


def snapshot_lock(config: Config, mode: str, plugins: Any):
    """The SnapshotLock for ``snapshot.locking.mode``."""
    return _pick("snapshot lock", "snapshot.locking.mode", mode, "snapshot.locking.mode.custom.name", config, plugins)
