"""The standalone service: a Debezium Server configuration turned into a running engine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cdc_core.config import ServerConfig, load_file, server_config
from cdc_core.config.common import OFFSET_FILE
from cdc_core.engine import Engine, connector_problems
from cdc_core.errors import CdcError, ConfigError
from cdc_core.plugins import PluginRegistry, registry


@dataclass
class Application:
    """A validated service configuration and the plugins it names."""

    server: ServerConfig
    plugins: PluginRegistry

    def problems(self) -> list[str]:
        """Every problem with the configuration, one line each, with the full property names."""
        from cdc_core.serializers.formats import binary_problem, format_problems, settings_from_server

        out = list(self.server.problems) + list(self.server.unknown)
        formats = settings_from_server(self.server.format_props)
        out += format_problems(formats, self.plugins)
        binary = binary_problem(formats, self.server.sink_type)
        if binary is not None:
            out.append(binary)
        out += [self.server.source_name(p) for p in connector_problems(self.server.source, self.plugins)]
        try:
            sink_cls = self.plugins.get("sink", self.server.sink_type)
        except CdcError as e:
            out.append(f"debezium.sink.type: {e}")
        else:
            fields = getattr(sink_cls, "fields", None)
            if fields is not None:
                out += [f"debezium.sink.{self.server.sink_type}.{p}" for p in self.server.sink.problems(fields)]
        return list(dict.fromkeys(out))

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
        return Engine(self.server.source, sink=sink, serializer=serializer, plugins=self.plugins)

    def offset_store(self) -> Any:
        """The offset store the configuration names (for ``cdc offsets show``)."""
        from cdc_core.config.common import OFFSET_STORAGE

        name = self.server.source.get(OFFSET_STORAGE)
        if not self.server.source.get(OFFSET_FILE) and name == OFFSET_STORAGE.default:
            raise ConfigError([f"{self.server.source_name(OFFSET_FILE.name)}: is not set, so no offsets are stored"])
        return self.plugins.get("offset store", name)(self.server.source)


def load_application(path: str, plugins: PluginRegistry | None = None) -> Application:
    """Read a configuration file into an Application (no validation yet)."""
    return Application(server_config(load_file(path)), plugins or registry())
