"""The Debezium Server layout: debezium.source.*, debezium.sink.<type>.*, debezium.format.*."""

from __future__ import annotations

import pytest

from cdc_core.config import server_config


def test_layout_is_split_into_source_sink_and_formats() -> None:
    server = server_config(
        {
            "debezium.sink.type": "file",
            "debezium.sink.file.dir": "/var/cdc",
            "debezium.format.value.schemas.enable": "false",
            "debezium.source.connector.class": "postgres",
            "debezium.source.topic.prefix": "dbserver1",
            "debezium.source.database.password": "hunter2",
            "quarkus.log.level": "INFO",
            "debezium.format.header": "json",
            "debezium.api.enabled": "true",
        }
    )
    assert server.server_layout is True
    assert server.problems == [] and server.unknown == []
    assert dict(server.source) == {"connector.class": "postgres", "topic.prefix": "dbserver1", "database.password": "hunter2"}
    assert server.sink_type == "file"
    assert dict(server.sink) == {"dir": "/var/cdc"}
    assert (server.key_format, server.value_format) == ("json", "json")
    assert (server.key_schemas_enable, server.value_schemas_enable) == (True, False)
    assert server.source_name("database.port") == "debezium.source.database.port"
    assert "hunter2" not in repr(server)


@pytest.mark.parametrize(
    ("props", "attr", "expected"),
    [
        ({"debezium.format.key.schemas.enable": "false"}, "key_schemas_enable", False),
        ({"debezium.format.value.schemas.enable": False}, "value_schemas_enable", False),
        ({"debezium.format.value.schemas.enable": "TRUE"}, "value_schemas_enable", True),
        ({"debezium.format.value": "JSON"}, "value_format", "json"),
        ({"debezium.format.key": "json"}, "key_format", "json"),
        ({}, "value_replace_null_with_default", True),
        ({"debezium.format.value.replace.null.with.default": "false"}, "value_replace_null_with_default", False),
        ({"debezium.format.key.replace.null.with.default": "false"}, "key_replace_null_with_default", False),
    ],
)
def test_formats(props: dict, attr: str, expected: object) -> None:
    server = server_config({"debezium.sink.type": "stdout", **props})
    assert server.problems == []
    assert getattr(server, attr) == expected


@pytest.mark.parametrize(
    ("props", "problems", "unknown"),
    [
        ({"debezium.source.topic.prefix": "x"}, ["debezium.sink.type: is required (e.g. stdout or file)"], []),
        # Format names and their options are checked by cdc_core.serializers.formats (tests/test_formats_*.py).
        (
            {"debezium.sink.type": "stdout", "debezium.format.value.schemas.enable": "sometimes"},
            ["debezium.format.value.schemas.enable: 'sometimes' is not a boolean (true or false)"],
            [],
        ),
        (
            {"debezium.sink.type": "stdout", "debezium.format.value.replace.null.with.default": "maybe"},
            ["debezium.format.value.replace.null.with.default: 'maybe' is not a boolean (true or false)"],
            [],
        ),
        (
            {"debezium.sink.type": "file", "debezium.sink.kafak.producer.bootstrap.servers": "k:9092",
             "debezium.sourse.topic.prefix": "x", "debezium.transformations": "unwrap"},
            [],
            ["debezium.sink.kafak.producer.bootstrap.servers: not a property of sink 'file'",
             "debezium.sourse.topic.prefix: unknown property; did you mean debezium.source.topic.prefix?",
             "debezium.transformations: unknown property; did you mean debezium.transforms?"],
        ),
    ],
)
def test_bad_and_unknown_server_properties_are_reported(props: dict, problems: list[str], unknown: list[str]) -> None:
    server = server_config(props)
    assert server.problems == problems
    assert server.unknown == unknown


def test_plain_properties_are_connector_properties_to_stdout() -> None:
    props = {"connector.class": "postgres", "topic.prefix": "dbserver1", "database.dbname": "inventory"}
    server = server_config(props)
    assert server.server_layout is False
    assert dict(server.source) == props
    assert server.sink_type == "stdout"
    assert server.problems == [] and server.unknown == []
    assert server.source_name("database.port") == "database.port"
