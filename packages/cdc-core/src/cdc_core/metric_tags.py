"""``custom.metric.tags``: ``k1=v1,k2=v2`` pairs added to every metric's MBean name and Prometheus labels."""

from __future__ import annotations

import re

#: Characters a JMX ObjectName key or unquoted value cannot hold (``,`` and ``=`` already split the text).
_NOT_IN_OBJECT_NAME = re.compile(r'[:*?"\n]')
_NOT_IN_LABEL = re.compile(r"[^A-Za-z0-9_]")
#: The MBean keys and Prometheus labels cdc sets itself.
RESERVED = ("context", "name", "plugin", "table", "type", "server")


def label_name(key: str) -> str:
    """A tag's Prometheus label: other characters than letters, digits and ``_`` become ``_``, as the JMX exporter does."""
    label = _NOT_IN_LABEL.sub("_", key)
    return f"_{label}" if label[:1].isdigit() else label


def parse_metric_tags(value: str | None) -> dict[str, str]:
    """The tags of ``k1=v1,k2=v2`` in order (a repeated key keeps its place and takes the last value, as
    Debezium's LinkedHashMap does); ValueError naming a malformed or reserved key."""
    tags: dict[str, str] = {}
    labels: dict[str, str] = {}
    for part in (value or "").split(","):
        if not part.strip():
            continue
        key, sep, val = part.partition("=")
        key, val = key.strip(), val.strip()
        if not sep or not key or not val or "=" in val:
            raise ValueError(f"{part.strip()!r} is not key=value")
        if _NOT_IN_OBJECT_NAME.search(key + val):
            raise ValueError(f"{part.strip()!r} holds a character an MBean name cannot (: * ? or \")")
        label = label_name(key)
        if key in RESERVED or label in RESERVED:
            raise ValueError(f"tag {key!r} is a name cdc's metrics already use; choose another")
        if labels.get(label, key) != key:
            raise ValueError(f"tags {labels[label]!r} and {key!r} are the same Prometheus label {label!r}")
        labels[label] = key
        tags[key] = val
    return tags
