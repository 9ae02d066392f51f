"""The standalone service: a Debezium Server configuration turned into a running engine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cdc_core import exactly_once
from cdc_core.config import Config, ServerConfig, load_file, server_config
from cdc_core.config.common import OFFSET_FILE
from cdc_core.config.catalogue import Report, suggestion
from cdc_core.engine import Engine, connector_report
from cdc_core.errors import CdcError, ConfigError
from cdc_core.plugins import PluginRegistry, registry


@dataclass
class Application:
    """A validated service configuration and the plugins it names."""

    server: ServerConfig
    plugins: PluginRegistry

    def __post_init__(self) -> None:
        self.server.source = inherit_sink_settings(self.server, self.plugins)

    def report(self) -> Report:
        """The configuration's errors, refused properties and those accepted without effect, with full names."""
        source = connector_report(self.server.source, self.plugins, self.server.source_name)
        out = Report(errors=[*self.server.problems, *self._format_problems(), *self.server.unknown, *source.errors],
                     refused=[*self.server.refused, *source.refused], ignored=[*self.server.ignored, *source.ignored],
                     reasons={**self.server.reasons, **source.reasons})
        out.errors += self._sink_problems()
        out.errors += exactly_once.problems(self.server.source, self.server.sink_type,
                                            self.server.sink.get("producer.bootstrap.servers"), self.server.source_name)
        return out

    def problems(self) -> list[str]:
        """Every problem that stops the configuration, one line each, with the full property names."""
        return self.report().problems

    def _format_problems(self) -> list[str]:
        """The formats' problems (``debezium.format.*``), and Avro's bytes in a sink of JSON lines."""
        from cdc_core.serializers.formats import binary_problem, format_problems, settings_from_server

        formats = settings_from_server(self.server.format_props)
        out = [p for p in format_problems(formats, self.plugins) if p not in self.server.problems]
        binary = binary_problem(formats, self.server.sink_type)
        if binary is not None:
            out.append(binary)
        return out

    def _sink_problems(self) -> list[str]:
        out: list[str] = []
        try:
            sink_cls = self.plugins.get("sink", self.server.sink_type)
        except CdcError as e:
            out.append(f"debezium.sink.type: {e}")
        else:
            fields = getattr(sink_cls, "fields", None)
            if fields is not None:
                names = [f.name for f in fields]
                for p in self.server.sink.problems(fields):
                    if p.endswith(": unknown property"):
                        p += suggestion(p.split(":", 1)[0], names, lambda n: f"debezium.sink.{self.server.sink_type}.{n}")
                    out.append(f"debezium.sink.{self.server.sink_type}.{p}")
        return out

    def engine(self) -> Engine:
        """Build the engine with its sink and serializer; ConfigError if anything is invalid."""
        problems = self.problems()
        if problems:
            raise ConfigError(problems)
        from cdc_core.serializers.formats import build_serializer, settings_from_server

        sink = self.plugins.get("sink", self.server.sink_type)(self.server.sink)
        # JSON on both sides: the serializer plugin named by the value format, given schemas.enable and (only when
        # turned off, so serializers written before it keep working) replace.null.with.default per side.
        serializer = build_serializer(settings_from_server(self.server.format_props), self.plugins)
        return Engine(self.server.source, sink=sink, serializer=serializer, plugins=self.plugins,
                      display=self.server.source_name, also_ignored=self.server.ignored)

    def offset_store(self) -> Any:
        """The offset store the configuration names (for ``cdc offsets show``)."""
        from cdc_core.config.common import OFFSET_STORAGE

        name = self.server.source.get(OFFSET_STORAGE)
        if not self.server.source.get(OFFSET_FILE) and name == OFFSET_STORAGE.default:
            raise ConfigError([f"{self.server.source_name(OFFSET_FILE.name)}: is not set, so no offsets are stored"])
        return self.plugins.get("offset store", name)(self.server.source)


def inherit_sink_settings(server: ServerConfig, plugins: PluginRegistry) -> Config:
    """The connector properties plus, as Debezium Server passes them, the sink's settings for a store of its kind.

    With ``debezium.sink.type=redis`` and a Redis offset store or schema history, an unset
    ``offset.storage.redis.address`` (``user``, ``password``, ...) or ``schema.history.internal.redis.*``
    takes the value of ``debezium.sink.redis.*``; only properties the store knows are passed.
    """
    from cdc_core.config.common import OFFSET_STORAGE, SCHEMA_HISTORY

    source = server.source
    if not server.server_layout:
        return source
    added: dict[str, Any] = {}
    for kind, field, prefix in (("offset store", OFFSET_STORAGE, "offset.storage."),
                                ("schema history store", SCHEMA_HISTORY, "schema.history.internal.")):
        try:
            cls = plugins.get(kind, source.get(field))
        except CdcError:
            continue
        fields = getattr(cls, "fields", None)
        if getattr(cls, "name", None) != server.sink_type or fields is None:
            continue
        for name, value in server.sink.items():
            target = f"{prefix}{server.sink_type}.{name}"
            if target not in source and fields.knows(target):
                added[target] = value
    return source.with_values(**added) if added else source


def load_application(path: str, plugins: PluginRegistry | None = None) -> Application:
    """Read a configuration file into an Application (no validation yet)."""
    return Application(server_config(load_file(path)), plugins or registry())
