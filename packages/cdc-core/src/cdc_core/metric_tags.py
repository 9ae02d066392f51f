"""``custom.metric.tags``: ``k1=v1,k2=v2`` pairs added to every metric's MBean name and Prometheus labels."""

from __future__ import annotations

import re

#: Keys must be Prometheus label names; these are the labels cdc sets itself.
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
RESERVED = ("context", "name", "plugin", "table", "type", "server")


def parse_metric_tags(value: str | None) -> dict[str, str]:
    """The tags of ``k1=v1,k2=v2`` in order; ValueError naming a malformed, reserved or repeated key."""
    tags: dict[str, str] = {}
    for part in (value or "").split(","):
        if not part.strip():
            continue
        key, sep, val = part.partition("=")
        key, val = key.strip(), val.strip()
        if not sep or not key or not val:
            raise ValueError(f"{part.strip()!r} is not key=value")
        if not _KEY.fullmatch(key):
            raise ValueError(f"tag {key!r} must be letters, digits and _ (a Prometheus label name)")
        if key in RESERVED:
            raise ValueError(f"tag {key!r} is a name cdc's metrics already use; choose another")
        if key in tags:
            raise ValueError(f"tag {key!r} is given twice")
        tags[key] = val
    return tags
