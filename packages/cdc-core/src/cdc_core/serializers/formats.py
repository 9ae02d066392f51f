"""Which format writes keys, values and headers: ``debezium.format.*`` or ``key.converter``/``value.converter``.

Debezium Server reads ``debezium.format.key`` / ``.value`` / ``.header`` (json by default) and
gives each converter the properties under ``debezium.format.`` (all three) and then those under
``debezium.format.key.`` / ``.value.`` / ``.header.`` (that one, overriding), prefix removed.
A Kafka Connect / embedded-engine configuration names converter classes instead
(``key.converter=io.confluent.connect.avro.AvroConverter``) with ``key.converter.*`` options.

Formats: keys ``json`` or ``avro``; values ``json``, ``cloudevents`` or ``avro`` (or a
serializer plugin's name); headers ``json``. Keys and values are converted per batch by one
converter each (``FormatSerializer``); with JSON on both sides the JsonSerializer does both in
one pass, as before.

Headers: as Debezium Server's JSON header converter (JsonConverter, ``schemas.enable`` on by
default) writes them, each header is ``{"schema":...,"payload":...}`` with the schema the header
was made with (``ChangeRecord.header_schemas``: the key schema for ``__debezium.oldkey``/``newkey``,
the field's for HeaderFrom and ExtractNewRecordState ``add.headers``, the literal's for
InsertHeader; ``"schema":null`` for a header made without one);
``debezium.format.header.schemas.enable=false`` hands sinks each header as its plain JSON value.
Kafka Connect spellings (``header.converter.*``, the library engine) keep plain values unless
``header.converter.schemas.enable=true``. Headers are framed after the keys and values are written,
only on the records that carry headers (``HeaderFraming``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from cdc_core.config.fields import InvalidValue, _parse_bool
from cdc_core.errors import CdcError, ConfigError
from cdc_core.events import ChangeRecord
from cdc_core.serializers.defaults import payload_filler
from cdc_core.spi.sink import SinkRecord

Side = Callable[[list[ChangeRecord]], list]

#: The formats each side accepts.
CHOICES = {"key": ("json", "avro"), "value": ("json", "cloudevents", "avro"), "header": ("json",)}
#: Converter classes as Kafka Connect and Debezium users name them, and their formats.
CONVERTER_CLASSES = {
    "org.apache.kafka.connect.json.JsonConverter": "json",
    "io.debezium.converters.CloudEventsConverter": "cloudevents",
    "io.confluent.connect.avro.AvroConverter": "avro",
    "io.apicurio.registry.utils.converter.AvroConverter": "avro",
}
#: JsonConverter's options.
JSON_OPTIONS = frozenset({"schemas.enable", "replace.null.with.default", "schemas.cache.size", "decimal.format",
                          "converter.type"})


@dataclass
class FormatSettings:
    """The format of each side and its converter options (prefix removed), and how the user spelled them."""

    key: str = "json"
    value: str = "json"
    header: str = "json"
    options: dict[str, dict[str, Any]] = field(default_factory=lambda: {"key": {}, "value": {}, "header": {}})
    #: How each side's options are spelled, for messages (``debezium.format.value.`` or ``value.converter.``).
    prefixes: dict[str, str] = field(default_factory=lambda: {s: f"debezium.format.{s}." for s in CHOICES})
    #: How each side's format is spelled, for messages.
    names: dict[str, str] = field(default_factory=lambda: {s: f"debezium.format.{s}" for s in CHOICES})
    #: Properties no converter knows (``<property>: unknown property``).
    unknown: list[str] = field(default_factory=list)
    #: ``schemas.enable`` of the header converter when unset: on in Debezium Server (JsonConverter's
    #: default), off for Kafka Connect spellings (whose default header converter writes plain values).
    header_schemas_default: bool = True

    def format(self, side: str) -> str:
        """The format of ``key``, ``value`` or ``header``."""
        return getattr(self, side)


def settings_from_server(props: Mapping[str, Any]) -> FormatSettings:
    """The formats of a Debezium Server configuration (its ``debezium.format.*`` properties)."""
    out = FormatSettings()
    common: dict[str, Any] = {}
    specific: dict[str, dict[str, Any]] = {s: {} for s in CHOICES}
    for key, value in props.items():
        key = str(key)
        if not key.startswith("debezium.format."):
            continue
        rest = key[len("debezium.format."):]
        if rest in CHOICES:
            setattr(out, rest, str(value).strip().lower())
            continue
        side, dot, option = rest.partition(".")
        if dot and side in CHOICES:
            specific[side][option] = value
        else:
            common[rest] = value
            option = rest
        if not _known_option(option):
            out.unknown.append(f"{key}: unknown property")
    out.options = {s: {**common, **specific[s]} for s in CHOICES}
    return out


def _known_option(name: str) -> bool:
    """True if some converter (JSON, CloudEvents, Avro) reads the option ``name``."""
    from cdc_core.serializers import avro, cloudevents

    return (name in JSON_OPTIONS or name in cloudevents.OPTIONS or name in avro.OPTIONS or name in avro.ACCEPTED
            or name in avro.REFUSED or name.startswith(("json.", "avro.")))


def settings_from_connect(config: Mapping[str, Any]) -> FormatSettings:
    """The formats of connector properties: ``key.converter`` / ``value.converter`` classes and their options.

    ``header.converter`` (Kafka Connect's SimpleHeaderConverter by default) is accepted as before and
    headers stay JSON values; ``header.converter.schemas.enable=true`` frames them.
    """
    out = FormatSettings(prefixes={s: f"{s}.converter." for s in CHOICES}, names={s: f"{s}.converter" for s in CHOICES},
                         header_schemas_default=False)
    options: dict[str, dict[str, Any]] = {s: {} for s in CHOICES}
    for key, value in config.items():
        key = str(key)
        for side in CHOICES:
            if key == f"{side}.converter" and side != "header":
                name = str(value).strip()
                setattr(out, side, CONVERTER_CLASSES.get(name, name))
            elif key.startswith(f"{side}.converter."):
                options[side][key[len(side) + len(".converter."):]] = value
    out.options = options
    return out


def _flag(options: Mapping[str, Any], name: str, default: bool, prefix: str, problems: list[str]) -> bool:
    raw = options.get(name)
    if raw is None or raw == "":
        return default
    try:
        return _parse_bool(str(raw))
    except InvalidValue as e:
        problems.append(f"{prefix}{name}: {e}")
        return default


def _json_side(is_key: bool, options: Mapping[str, Any], prefix: str) -> tuple[Side, bool, bool]:
    """JsonConverter for one side: the converter, and its ``schemas.enable`` / ``replace.null.with.default``."""
    from cdc_core.serializers.json import _converter

    problems: list[str] = []
    schemas = _flag(options, "schemas.enable", True, prefix, problems)
    replace = _flag(options, "replace.null.with.default", True, prefix, problems)
    decimal = str(options.get("decimal.format") or "BASE64").strip().upper()
    if decimal != "BASE64":
        problems.append(f"{prefix}decimal.format: {decimal!r} is not supported; decimals are written as BASE64, "
                        "as Debezium's JsonConverter default")
    if problems:
        raise ConfigError(problems)
    convert = _converter(schemas, replace)
    if is_key:
        return (lambda records: [convert(r.key_schema, r.key) for r in records]), schemas, replace
    return (lambda records: [convert(r.value_schema, r.value) for r in records]), schemas, replace


def _side(settings: FormatSettings, side: str) -> Any:
    """The converter of ``key`` or ``value`` (a callable over a batch with a ``close``, or a JSON side)."""
    fmt, options, prefix = settings.format(side), settings.options[side], settings.prefixes[side]
    if fmt == "avro":
        from cdc_core.serializers.avro import AvroConverter

        return AvroConverter(side == "key", options, prefix)
    if fmt == "cloudevents":
        from cdc_core.serializers.cloudevents import CloudEventsConverter

        return CloudEventsConverter(options, prefix, is_key=side == "key")
    return _json_side(side == "key", options, prefix)[0]


def header_framer(settings: FormatSettings) -> Callable[[ChangeRecord], dict[str, Any]] | None:
    """Headers with schemas (``schemas.enable`` on the header converter), or None to pass them as they are."""
    problems: list[str] = []
    prefix = settings.prefixes["header"]
    options = settings.options["header"]
    schemas = _flag(options, "schemas.enable", settings.header_schemas_default, prefix, problems)
    replace = _flag(options, "replace.null.with.default", True, prefix, problems)
    if problems:
        raise ConfigError(problems)
    if not schemas:
        return None
    no_schemas: dict[str, Any] = {}

    def framed(r: ChangeRecord) -> dict[str, Any]:
        # JsonConverter.fromConnectHeader: {"schema","payload"}; a null value without schema is a null header.
        out = {}
        schemas = r.header_schemas or no_schemas
        for name, value in r.headers.items():
            schema = schemas.get(name)
            if schema is None:
                out[name] = None if value is None else {"schema": None, "payload": value}
            else:
                filler = payload_filler(schema, replace)
                out[name] = {"schema": schema.to_json(), "payload": value if filler is None else filler(value)}
        return out

    return framed


class HeaderFraming:
    """A serializer whose records' headers are then framed by the header converter (records without headers untouched)."""

    def __init__(self, inner: Any, frame: Callable[[ChangeRecord], dict[str, Any]]):
        self.inner, self.frame = inner, frame

    def serialize(self, records: list[ChangeRecord]) -> list[SinkRecord]:
        """The inner serializer's records, each with its headers framed."""
        out = self.inner.serialize(records)
        frame = self.frame
        for i, r in enumerate(records):
            if r.headers:
                out[i] = out[i]._replace(headers=frame(r))
        return out

    def close(self) -> None:
        """Close the inner serializer."""
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "inner":  # not set yet (copy, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)


def format_problems(settings: FormatSettings, plugins: Any = None) -> list[str]:
    """Every problem with the formats and their options, one line each (nothing is contacted)."""
    problems: list[str] = []
    plugin_names = _plugin_formats(plugins)
    for side, choices in CHOICES.items():
        fmt = settings.format(side)
        allowed = list(choices) + ([n for n in plugin_names if n not in choices] if side == "value" else [])
        if fmt not in allowed:
            what = "converter class" if settings.names[side].endswith(".converter") else "format"
            extra = ""
            if settings.names[side].endswith(".converter"):
                extra = " (" + ", ".join(k for k, v in CONVERTER_CLASSES.items() if v in choices) + ")"
            problems.append(f"{settings.names[side]}: {fmt!r} is not a supported {what}; choose "
                            f"{', '.join(allowed)}{extra}")
    if settings.value not in CHOICES["value"] and settings.key != "json":
        problems.append(f"{settings.names['key']}: {settings.key!r} cannot be combined with the serializer plugin "
                        f"{settings.value!r}, which writes keys itself; use json")
    if problems:
        return problems + settings.unknown
    problems += settings.unknown
    for side in ("key", "value"):
        if settings.format(side) in CHOICES[side]:
            try:
                converter = _side(settings, side)
            except ConfigError as e:
                problems += e.problems
            else:
                close = getattr(converter, "close", None)
                if close is not None:
                    close()
    try:
        header_framer(settings)
    except ConfigError as e:
        problems += e.problems
    return problems


def _plugin_formats(plugins: Any) -> list[str]:
    if plugins is None:
        return []
    try:
        return sorted(plugins.names("serializer"))
    except (AttributeError, CdcError):
        return []


def uses_json_only(settings: FormatSettings) -> bool:
    """True when keys and values are JSON (the JsonSerializer's case; headers are framed after it)."""
    return settings.key == "json" and settings.value == "json"


class FormatSerializer:
    """Keys, values and headers each written by their own converter, per batch."""

    name: ClassVar[str] = "formats"
    #: True when keys or values are binary (Avro) rather than JSON text.
    binary: bool = False

    def __init__(self, key: Side, value: Side, header: Callable[[ChangeRecord], dict[str, Any]] | None = None,
                 *, binary: bool = False):
        self.key, self.value, self.header = key, value, header
        self.binary = binary

    def serialize(self, records: list[ChangeRecord]) -> list[SinkRecord]:
        """Serialize a batch: every key, then every value, then the headers."""
        keys = self.key(records)
        values = self.value(records)
        header = self.header
        new = tuple.__new__
        return [new(SinkRecord, (r.topic, k, v, header(r) if header is not None and r.headers else r.headers))
                for r, k, v in zip(records, keys, values)]

    def close(self) -> None:
        """Close the converters' registry clients."""
        for side in (self.key, self.value):
            close = getattr(side, "close", None)
            if close is not None:
                close()


def build_serializer(settings: FormatSettings, plugins: Any = None) -> Any:
    """The serializer the formats name; ConfigError naming the properties when they are invalid."""
    problems = format_problems(settings, plugins)
    if problems:
        raise ConfigError(problems)
    if settings.value not in CHOICES["value"] or uses_json_only(settings):
        # A serializer plugin's name, or JSON on both sides: the serializer class writes both.
        from cdc_core.serializers.json import JsonSerializer

        key_flags = _json_side(True, settings.options["key"], settings.prefixes["key"])
        value_flags = _json_side(False, settings.options["value"], settings.prefixes["value"])
        replace = {f"{side}_replace_null_with_default": False
                   for side, flags in (("key", key_flags), ("value", value_flags)) if not flags[2]}
        cls = plugins.get("serializer", settings.value) if plugins is not None else JsonSerializer
        serializer = cls(key_flags[1], value_flags[1], **replace)
        header = header_framer(settings)
        return serializer if header is None else HeaderFraming(serializer, header)
    return FormatSerializer(_side(settings, "key"), _side(settings, "value"), header_framer(settings),
                            binary="avro" in (settings.key, settings.value))


def binary_problem(settings: FormatSettings, sink_type: str) -> str | None:
    """Why ``sink_type`` cannot carry these formats (Avro bytes in a JSON-lines sink), or None."""
    if sink_type in ("stdout", "file") and "avro" in (settings.key, settings.value):
        side = settings.names["value" if settings.value == "avro" else "key"]
        return (f"{side}: avro writes binary records, which the {sink_type} sink (JSON lines) cannot hold; "
                "use a sink that carries bytes (e.g. kafka, redis, nats, rabbitmq, http) or the json format")
    return None
