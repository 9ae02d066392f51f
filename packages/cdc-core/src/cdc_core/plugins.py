"""The plugin manager: finds plugins in the ``cdc`` entry-point group and looks them up by name."""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
from typing import Any

import pluggy

from cdc_core import hookspecs
from cdc_core.errors import PluginError

log = logging.getLogger("cdc.plugins")

#: The plugin kinds and the hook that registers each.
KINDS = {
    "connector": "register_connectors",
    "sink": "register_sinks",
    "offset store": "register_offset_stores",
    "schema history store": "register_schema_history_stores",
    "serializer": "register_serializers",
    "converter": "register_converters",
    "snapshotter": "register_snapshotters",
    "snapshot query": "register_snapshot_queries",
    "snapshot lock": "register_snapshot_locks",
    "signal channel": "register_signal_channels",
    "notification channel": "register_notification_channels",
    "transform": "register_transforms",
    "predicate": "register_predicates",
    "topic naming strategy": "register_topic_naming_strategies",
}


def _warn(message: str) -> None:
    log.warning(message)


class LazyPlugin:
    """A plugin class named by its import path, imported only when a lookup asks for it.

    A hook may return one in place of a class whose module is costly to import: every connector's module
    pulls in its driver (psycopg, pymysql, sqlglot, ...), and a process runs one connector, so importing all
    of them cost each ``cdc run`` about 0.5 s of start-up for modules it never used. ``name`` and
    ``class_names`` are what the registry matches before importing; the class's own must be the same
    objects (define them once, beside the LazyPlugin, and let the class take them from there).
    """

    __slots__ = ("target", "name", "class_names")

    def __init__(self, target: str, name: str, class_names: tuple[str, ...] = ()):
        #: ``"package.module:ClassName"``.
        self.target = target
        self.name = name
        self.class_names = class_names

    def load(self) -> type:
        """Import and return the class."""
        module, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module), attr)

    def __repr__(self) -> str:
        return f"LazyPlugin({self.target!r})"


class PluginRegistry:
    """Every plugin of every kind, by name; built-ins come through the same entry points."""

    def __init__(self, load_entry_points: bool = True):
        self.manager = pluggy.PluginManager("cdc")
        self.manager.add_hookspecs(hookspecs)
        self._by_kind: dict[str, dict[str, type]] | None = None
        if load_entry_points:
            self._load_entry_points()
        if not any(getattr(p, "__name__", "") == "cdc_core.builtins" for p in self.manager.get_plugins()):
            # Running from a source tree without installed metadata: the built-ins still count.
            from cdc_core import builtins

            self.manager.register(builtins, name="core")

    def _load_entry_points(self) -> None:
        for ep in importlib.metadata.entry_points(group="cdc"):
            if self.manager.has_plugin(ep.name):
                continue
            try:
                plugin = ep.load()
                self.manager.register(plugin, name=ep.name)
            except Exception as e:  # a broken plugin must not take cdc down
                _warn(f"cdc plugin {ep.name!r} ({ep.value}) could not be loaded and is skipped: {type(e).__name__}: {e}")

    def register(self, plugin: Any, name: str | None = None) -> None:
        """Register a plugin object (a module or instance with hook implementations)."""
        self.manager.register(plugin, name=name)
        self._by_kind = None

    def _collect(self) -> dict[str, dict[str, type]]:
        if self._by_kind is not None:
            return self._by_kind
        by_kind: dict[str, dict[str, type]] = {k: {} for k in KINDS}
        for kind, hook_name in KINDS.items():
            hook = getattr(self.manager.hook, hook_name)
            for impl in hook.get_hookimpls():
                try:
                    classes = impl.function() or []
                except Exception as e:
                    _warn(f"cdc plugin {impl.plugin_name!r} failed in {hook_name} and is skipped: {type(e).__name__}: {e}")
                    continue
                for cls in classes:
                    for name in (getattr(cls, "name", None), *getattr(cls, "class_names", ())):
                        if name:
                            by_kind[kind].setdefault(name, cls)
        self._by_kind = by_kind
        return by_kind

    def names(self, kind: str) -> list[str]:
        """The short names of every plugin of ``kind``."""
        return sorted({getattr(c, "name") for c in self._collect()[kind].values()})

    def get(self, kind: str, name: str) -> type:
        """The plugin class of ``kind`` called ``name`` (short or class name); PluginError naming the choices."""
        by_name = self._collect()[kind]
        found = by_name.get(name)
        if found is None:
            raise PluginError(f"no {kind} called {name!r}; available: {', '.join(self.names(kind)) or 'none'}")
        if found.__class__ is LazyPlugin:
            try:
                cls = found.load()
            except Exception as e:  # asked for by name: the user's configuration cannot run without it
                raise PluginError(f"the {kind} {name!r} ({found.target}) could not be loaded: "
                                  f"{type(e).__name__}: {e}") from e
            for n in (found.name, *found.class_names):
                if by_name.get(n) is found:
                    by_name[n] = cls
            found = cls
        return found


_default: PluginRegistry | None = None


def registry() -> PluginRegistry:
    """The process-wide plugin registry, created on first use."""
    global _default
    if _default is None:
        _default = PluginRegistry()
    return _default
