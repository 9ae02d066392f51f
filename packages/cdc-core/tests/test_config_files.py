"""Loading configuration files: .properties, nested and flat YAML, JSON, and their errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc_core.config import ConfigField, load_file, server_config
from cdc_core.config import common
from cdc_core.errors import ConfigError

CONFIG_DIR = Path(__file__).parent / "data" / "config"
FILES = ["app.properties", "app.yaml", "app_flat.yaml", "app.json"]

PORT = ConfigField("database.port", "int", 5432)
HOSTNAME = ConfigField("database.hostname", "string", "localhost")
SNAPSHOT_MODE = ConfigField(
    "snapshot.mode", "enum", "initial", allowed=("initial", "no_data"), aliases={"never": "no_data"}
)


@pytest.mark.parametrize("name", FILES)
def test_every_format_gives_the_same_configuration(name: str) -> None:
    server = server_config(load_file(CONFIG_DIR / name))
    assert server.problems == [] and server.unknown == []
    assert server.sink_type == "file"
    assert server.sink.get("dir") == "out"
    assert server.value_schemas_enable is False
    assert server.key_schemas_enable is True
    source = server.source
    assert sorted(source) == sorted(
        [
            "connector.class", "topic.prefix", "database.hostname", "database.port", "database.dbname",
            "database.password", "table.include.list", "tombstones.on.delete", "snapshot.mode",
        ]
    )
    assert source.get(common.TOPIC_PREFIX) == "dbserver1"
    assert source.get(HOSTNAME) == "db.example.com"
    assert source.get(PORT) == 5433
    assert source.get(common.TOMBSTONES_ON_DELETE) is False
    assert source.get(SNAPSHOT_MODE) == "no_data"
    assert [p.pattern for p in source.get(common.TABLE_INCLUDE)] == ["public.customers", "public.orders"]


def test_nested_yaml_flattens_to_dotted_names_with_scalars_kept() -> None:
    props = load_file(CONFIG_DIR / "app.yaml")
    assert props["debezium.source.database.port"] == 5433
    assert props["debezium.format.value.schemas.enable"] is False
    assert props["debezium.source.table.include.list"] == "public.customers,public.orders"
    assert props["debezium.sink.file.dir"] == "out"


@pytest.mark.parametrize(
    ("name", "text", "reason"),
    [
        ("bad.yaml", "a: [1, 2\n", "not valid YAML"),
        ("list.yaml", "- a\n- b\n", "expected a mapping of properties at the top level"),
        ("bad.json", '{"a": 1,\n "b": }\n', "not valid JSON at line 2 column"),
        ("list.json", "[1, 2]", "expected a JSON object of properties"),
    ],
)
def test_malformed_file_is_a_config_error_naming_the_file(tmp_path: Path, name: str, text: str, reason: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_file(path)
    [problem] = err.value.problems
    assert problem.startswith(f"{path}: ")
    assert reason in problem


def test_missing_file_is_a_config_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.properties"
    with pytest.raises(ConfigError) as err:
        load_file(path)
    assert err.value.problems == [f"cannot read configuration file {path}: No such file or directory"]


def test_empty_yaml_is_an_empty_configuration(tmp_path: Path) -> None:
    path = tmp_path / "empty.yml"
    path.write_text("# nothing yet\n", encoding="utf-8")
    assert load_file(path) == {}


def test_other_extensions_are_read_as_properties(tmp_path: Path) -> None:
    path = tmp_path / "application.conf"
    path.write_text("a = 1\nb: two\n", encoding="utf-8")
    assert load_file(path) == {"a": "1", "b": "two"}
