"""Finding an optional connector capability: a class attribute, or a module next to the connector's."""

from __future__ import annotations

import importlib


def capability_for(connector_class: type, attribute: str, module_name: str) -> type | None:
    """``connector_class.<attribute>``, else ``<connector package>.<module_name>.<attribute>``, else None."""
    found = getattr(connector_class, attribute, None)
    if found is not None:
        return found
    package = connector_class.__module__.rpartition(".")[0]
    if not package:
        return None
    try:
        module = importlib.import_module(f"{package}.{module_name}")
    except ModuleNotFoundError as e:
        if e.name != f"{package}.{module_name}":
            raise
        return None
    return getattr(module, attribute, None)
