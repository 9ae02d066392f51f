"""The Debezium Server layout: ``debezium.source.*``, ``debezium.sink.*`` and ``debezium.format.*``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cdc_core.config.config import Config
from cdc_core.config.fields import InvalidValue, _parse_bool

_FORMAT_KEYS = {
    "debezium.format.key": "key_format",
    "debezium.format.value": "value_format",
    "debezium.format.key.schemas.enable": "key_schemas_enable",
    "debezium.format.value.schemas.enable": "value_schemas_enable",
    # JsonConverter's replace.null.with.default (Kafka 3.9), passed to the converter as Debezium Server does.
    "debezium.format.key.replace.null.with.default": "key_replace_null_with_default",
    "debezium.format.value.replace.null.with.default": "value_replace_null_with_default",
}
_BOOLEAN_FORMAT_KEYS = frozenset({"key_schemas_enable", "value_schemas_enable", "key_replace_null_with_default",
                                  "value_replace_null_with_default"})
_TRANSFORM_PREFIXES = ("debezium.transforms", "debezium.predicates")


@dataclass
class ServerConfig:
    """A standalone service's configuration: the connector's properties, the sink and the formats."""

    source: Config
    sink_type: str = "stdout"
    sink: Config = field(default_factory=Config)
    key_format: str = "json"
    value_format: str = "json"
    key_schemas_enable: bool = True
    value_schemas_enable: bool = True
    key_replace_null_with_default: bool = True
    value_replace_null_with_default: bool = True
    problems: list[str] = field(default_factory=list)
    #: Properties nobody documents, one line each with a suggestion (reported by validation).
    unknown: list[str] = field(default_factory=list)
    #: Documented server properties cdc does not implement and refuses (one line each, naming why).
    refused: list[str] = field(default_factory=list)
    #: Documented server properties cdc accepts without effect (names), and why.
    ignored: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)
    #: True for the Debezium Server layout; False for plain connector properties.
    server_layout: bool = True
    #: Every ``debezium.format.*`` property as written (``cdc_core.serializers.formats`` reads them).
    format_props: dict[str, Any] = field(default_factory=dict)
    #: True when the transforms came as ``debezium.transforms``/``debezium.predicates`` (Debezium Server's own keys).
    server_transforms: bool = False

    def source_name(self, name: str) -> str:
        """A connector property's name as the user wrote it (with ``debezium.source.`` in the server layout)."""
        if not self.server_layout:
            return name
        if self.server_transforms and name.startswith(("transforms", "predicates")):
            return f"debezium.{name}"
        return f"debezium.source.{name}"


def server_config(props: Mapping[str, Any]) -> ServerConfig:
    """Split a flat property dict in the Debezium Server layout into its parts.

    A dict without any ``debezium.`` property is taken as plain connector properties (the
    embedded-engine layout) streaming to stdout.
    """
    if not any(str(k).startswith("debezium.") for k in props):
        return ServerConfig(source=Config(props), server_layout=False)
    source: dict[str, Any] = {}
    sink_props: dict[str, Any] = {}
    out = ServerConfig(source=Config())
    sink_type = props.get("debezium.sink.type")
    if sink_type in (None, ""):
        out.problems.append("debezium.sink.type: is required (e.g. stdout or file)")
    else:
        out.sink_type = str(sink_type).strip()
    sink_prefix = f"debezium.sink.{out.sink_type}."
    rest: dict[str, Any] = {}
    for key, value in props.items():
        key = str(key)
        if key.startswith("debezium.source."):
            source[key[len("debezium.source.") :]] = value
        elif key == "debezium.sink.type":
            continue
        elif key in _TRANSFORM_PREFIXES or key.startswith(tuple(f"{p}." for p in _TRANSFORM_PREFIXES)):
            # Debezium Server passes debezium.transforms* / debezium.predicates* to the engine as transforms* / predicates*.
            source[key[len("debezium.") :]] = value
            out.server_transforms = True
        elif key.startswith(sink_prefix):
            sink_props[key[len(sink_prefix) :]] = value
        elif key.startswith("debezium.format."):
            out.format_props[key] = value
            attr = _FORMAT_KEYS.get(key)
            if attr is None:  # the formats' own options: checked by cdc_core.serializers.formats
                continue
            if attr in _BOOLEAN_FORMAT_KEYS:
                try:
                    setattr(out, attr, _parse_bool(str(value)))
                except InvalidValue as e:
                    out.problems.append(f"{key}: {e}")
            else:  # the format's name: checked by cdc_core.serializers.formats
                setattr(out, attr, str(value).strip().lower())
        else:
            rest[key] = value
    _classify_rest(out, rest)
    out.source = Config(source)
    out.sink = Config(sink_props)
    return out


_SECTIONS = ("source", "sink", "format", "transforms", "predicates", "api")


def _section_suggestion(line: str) -> str:
    """Add ``did you mean debezium.source.X?`` to an unknown ``debezium.sourse.X`` that has no suggestion yet."""
    import difflib

    key = line.split(":", 1)[0]
    parts = key.split(".", 2)
    if "did you mean" in line or len(parts) < 3 or parts[0] != "debezium":
        return line
    close = difflib.get_close_matches(parts[1], _SECTIONS, n=1, cutoff=0.6)
    return f"{line}; did you mean debezium.{close[0]}.{parts[2]}?" if close else line


def _classify_rest(out: ServerConfig, rest: dict[str, Any]) -> None:
    """Sort the server properties the layout does not consume by the server's catalogue.

    Another sink type's properties are accepted without effect when that sink documents them (a
    configuration kept from another sink); the transforms, predicates and formats are their owners'.
    """
    from cdc_core.config.catalogue import Catalogue, classify, suggestion
    from cdc_core.config.fields import Fields

    catalogue = Catalogue.load("server")
    sink_props = {k: v for k, v in rest.items() if k.startswith("debezium.sink.")}
    for key in sink_props:
        if catalogue is not None and catalogue.find(key) is not None:
            out.ignored.append(key)
            out.reasons[key] = f"a property of another sink; debezium.sink.type is {out.sink_type}"
        else:
            names = [n for n in (catalogue.names() if catalogue else []) if n.startswith("debezium.sink.")]
            out.unknown.append(f"{key}: not a property of sink {out.sink_type!r}{suggestion(key, names)}")
    report = classify({k: v for k, v in rest.items() if k not in sink_props}, Fields(), catalogue)
    out.unknown += [_section_suggestion(line) for line in report.errors]
    out.refused += report.refused
    out.ignored += report.ignored
    out.reasons.update(report.reasons)
