"""The plugin registry: entry points, lookup by short and class name, and broken plugins only warned about."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from memory_connector import MemoryConnector, MemoryPlugin

from cdc_core.errors import PluginError
from cdc_core.hookspecs import hookimpl
from cdc_core.plugins import PluginRegistry
from cdc_core.sinks.file import FileSink
from cdc_core.sinks.stdout import StdoutSink
from cdc_core.stores.file_history import FileSchemaHistoryStore
from cdc_core.stores.file_offsets import FileOffsetStore
from cdc_core.stores.memory_history import MemorySchemaHistoryStore
from cdc_core.stores.memory_offsets import MemoryOffsetStore
from cdc_core.serializers.json import JsonSerializer

GOOD_PLUGIN = '''
from cdc_core.hookspecs import hookimpl


class GoodSink:
    name = "good"

    def __init__(self, config):
        pass


@hookimpl
def register_sinks():
    return [GoodSink]
'''


@pytest.fixture
def installed_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A distribution on sys.path whose ``cdc`` entry points are one good and two broken plugins."""
    dist = tmp_path / "cdc_test_plugins-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: cdc-test-plugins\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[cdc]\n"
        "missing = cdc_test_no_such_module\n"
        "explodes = cdc_test_exploding_plugin\n"
        "good = cdc_test_good_plugin\n"
    )
    (tmp_path / "cdc_test_exploding_plugin.py").write_text("raise RuntimeError('boom at import')\n")
    (tmp_path / "cdc_test_good_plugin.py").write_text(GOOD_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    for name in ("cdc_test_good_plugin", "cdc_test_exploding_plugin"):
        sys.modules.pop(name, None)


def test_broken_entry_points_are_skipped_with_a_warning(installed_plugins, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="cdc.plugins"):
        plugins = PluginRegistry()
    warnings = [r.getMessage() for r in caplog.records if r.name == "cdc.plugins"]
    assert len(warnings) == 2
    missing = next(w for w in warnings if "'missing'" in w)
    assert "cdc_test_no_such_module" in missing and "could not be loaded and is skipped" in missing
    assert "ModuleNotFoundError" in missing
    explodes = next(w for w in warnings if "'explodes'" in w)
    assert "RuntimeError: boom at import" in explodes
    # The rest still works: the good plugin and the built-ins.
    assert plugins.get("sink", "good").__name__ == "GoodSink"
    assert plugins.get("sink", "file") is FileSink


class ExplodingPlugin:
    """A plugin whose hook raises."""

    @hookimpl
    def register_connectors(self) -> list[type]:
        raise RuntimeError("boom in hook")


def test_a_hook_that_raises_is_skipped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    plugins = PluginRegistry(load_entry_points=False)
    plugins.register(ExplodingPlugin(), name="exploding")
    plugins.register(MemoryPlugin(), name="memory")
    with caplog.at_level(logging.WARNING, logger="cdc.plugins"):
        assert plugins.get("connector", "memory") is MemoryConnector
    assert [r.getMessage() for r in caplog.records if r.name == "cdc.plugins"] == [
        "cdc plugin 'exploding' failed in register_connectors and is skipped: RuntimeError: boom in hook"
    ]
    assert plugins.names("connector") == ["memory"]


@pytest.mark.parametrize(
    ("kind", "name", "cls"),
    [
        ("sink", "stdout", StdoutSink),
        ("sink", "file", FileSink),
        ("offset store", "file", FileOffsetStore),
        ("offset store", "org.apache.kafka.connect.storage.FileOffsetBackingStore", FileOffsetStore),
        ("offset store", "memory", MemoryOffsetStore),
        ("offset store", "org.apache.kafka.connect.storage.MemoryOffsetBackingStore", MemoryOffsetStore),
        ("schema history store", "file", FileSchemaHistoryStore),
        ("schema history store", "io.debezium.storage.file.history.FileSchemaHistory", FileSchemaHistoryStore),
        ("schema history store", "io.debezium.relational.history.MemorySchemaHistory", MemorySchemaHistoryStore),
        ("serializer", "json", JsonSerializer),
        ("connector", "memory", MemoryConnector),
        ("connector", "io.example.cdc.MemoryConnector", MemoryConnector),
    ],
)
def test_lookup_by_short_name_and_debezium_class_name(kind: str, name: str, cls: type) -> None:
    plugins = PluginRegistry(load_entry_points=False)
    plugins.register(MemoryPlugin(), name="memory")
    assert plugins.get(kind, name) is cls


@pytest.mark.parametrize(
    ("kind", "name", "message"),
    [
        ("sink", "pulsar", "no sink called 'pulsar'; available: file, "),
        ("offset store", "jdbc", "no offset store called 'jdbc'; available: file, "),
        ("connector", "mysql", "no connector called 'mysql'; available: none"),
    ],
)
def test_unknown_name_lists_the_available_ones(kind: str, name: str, message: str) -> None:
    plugins = PluginRegistry(load_entry_points=False)
    with pytest.raises(PluginError) as err:
        plugins.get(kind, name)
    # The built-ins, sorted: brokers' sinks and stores come after "file" (kafka, memory, redis, stdout, ...).
    assert str(err.value).startswith(message) or str(err.value) == message.rstrip(", ").replace(": file", ": none")


def test_installed_connectors_come_from_entry_points() -> None:
    plugins = PluginRegistry()
    assert "postgres" in plugins.names("connector")
    assert plugins.get("connector", "io.debezium.connector.postgresql.PostgresConnector") is plugins.get(
        "connector", "postgres"
    )


class LazyConnectorPlugin:
    """A plugin whose connector is named by import path (``LazyPlugin``), as the database packages register theirs."""

    def __init__(self, target: str):
        self.target = target

    @hookimpl
    def register_connectors(self):
        from cdc_core.plugins import LazyPlugin

        return [LazyPlugin(self.target, "memory", ("io.example.cdc.MemoryConnector",))]


def test_a_lazy_connector_is_imported_when_looked_up_by_either_name() -> None:
    plugins = PluginRegistry(load_entry_points=False)
    plugins.register(LazyConnectorPlugin("memory_connector:MemoryConnector"), name="lazy")
    assert plugins.names("connector") == ["memory"]
    assert plugins.get("connector", "io.example.cdc.MemoryConnector") is MemoryConnector
    assert plugins.get("connector", "memory") is MemoryConnector


def test_a_lazy_connector_that_cannot_be_imported_names_itself() -> None:
    plugins = PluginRegistry(load_entry_points=False)
    plugins.register(LazyConnectorPlugin("cdc_test_no_such_module:Connector"), name="lazy")
    with pytest.raises(PluginError) as err:
        plugins.get("connector", "memory")
    assert str(err.value) == ("the connector 'memory' (cdc_test_no_such_module:Connector) could not be loaded: "
                              "ModuleNotFoundError: No module named 'cdc_test_no_such_module'")


def test_running_one_connector_imports_no_other_connector() -> None:
    """``connector.class=postgres`` loads neither the MySQL family's modules (sqlglot) nor SQL Server's or Db2's:
    each connector's import is start-up time every ``cdc run`` would pay."""
    import subprocess

    code = ("import sys; from cdc_core.config import Config; from cdc_core.engine import connector_class; "
            "connector_class(Config({'connector.class': 'postgres'})); "
            "print(sorted(m for m in ('cdc_mysql.connector', 'cdc_mariadb.connector', 'cdc_sqlserver.connector', "
            "'cdc_db2.connector', 'cdc_yugabyte.connector', 'sqlglot') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
