"""Config: typed values and defaults, enum aliases, problems one per line, and secrets never shown."""

from __future__ import annotations

from typing import Any

import pytest

from cdc_core.config import Config, ConfigField, Fields
from cdc_core.config.config import exclusive
from cdc_core.errors import ConfigError

F = ConfigField


@pytest.mark.parametrize(
    ("field", "raw", "expected"),
    [
        (F("s", "string"), "text", "text"),
        (F("s", "string", "dflt"), None, "dflt"),
        (F("s", "string", "dflt"), "", ""),  # an empty string is a value for strings
        (F("i", "int", 7), " 42 ", 42),
        (F("i", "int", 7), 42, 42),  # YAML/JSON scalars
        (F("i", "int", 7), None, 7),
        (F("i", "int", 7), "", 7),  # empty means unset for non-strings
        (F("l", "long", 500), "10000000000", 10_000_000_000),
        (F("d", "double", 1.5), "2.25", 2.25),
        (F("b", "boolean", True), "false", False),
        (F("b", "boolean", False), "TRUE", True),
        (F("b", "boolean", False), "yes", True),
        (F("b", "boolean", True), "off", False),
        (F("b", "boolean", True), False, False),
        (F("b", "boolean", False), None, False),
        (F("list", "list"), " a, b ,,c ", ["a", "b", "c"]),
        (F("e", "enum", "precise", allowed=("precise", "double", "string")), " DOUBLE ", "double"),
        (F("e", "enum", "precise", allowed=("precise", "double", "string")), None, "precise"),
    ],
)
def test_typed_get(field: ConfigField, raw: Any, expected: Any) -> None:
    config = Config({} if raw is None else {field.name: raw})
    assert config.get(field) == expected


def test_get_by_name_is_the_raw_value() -> None:
    config = Config({"database.port": "5432"})
    assert config.get("database.port") == "5432"
    assert config.get("database.hostname") is None
    assert config.get("database.hostname", "localhost") == "localhost"


MODE = F(
    "snapshot.mode", "enum", "initial",
    allowed=("initial", "initial_only", "no_data", "always", "when_needed"),
    aliases={"never": "no_data", "exported": "initial"},
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("never", "no_data"), ("NEVER", "no_data"), ("exported", "initial"), ("no_data", "no_data"), ("always", "always")],
)
def test_enum_aliases_map_to_the_canonical_value(raw: str, expected: str) -> None:
    assert Config({"snapshot.mode": raw}).get(MODE) == expected


def test_invalid_enum_lists_the_allowed_values() -> None:
    with pytest.raises(ConfigError) as err:
        Config({"snapshot.mode": "sometimes"}).get(MODE)
    assert err.value.problems == [
        "snapshot.mode: 'sometimes' is not one of: initial, initial_only, no_data, always, when_needed"
    ]


def _prefix_ok(value: str) -> str | None:
    return None if value.isidentifier() else f"{value!r} is not an identifier"


FIELDS = Fields(
    [
        F("topic.prefix", "string", required=True, validator=_prefix_ok),
        F("database.port", "int", 5432, minimum=1),
        F("tombstones.on.delete", "boolean", True),
        F("table.include.list", "regex-list"),
        MODE,
        F("database.password", "password"),
        F("replica.password.timeout.ms", "int", 10),
    ],
    prefixes=("driver.",),
)


@pytest.mark.parametrize(
    ("props", "problems"),
    [
        ({"topic.prefix": "ok"}, []),
        ({"topic.prefix": "ok", "driver.anything": "x"}, []),
        ({}, ["topic.prefix: is required and has no value"]),
        ({"topic.prefix": ""}, ["topic.prefix: is required and has no value"]),
        ({"topic.prefix": "not ok"}, ["topic.prefix: 'not ok' is not an identifier"]),
        ({"topic.prefix": "ok", "database.port": "0"}, ["database.port: '0' is below the minimum 1"]),
        ({"topic.prefix": "ok", "table.include.list": "public.(a"},
         ["table.include.list: 'public.(a' is not a valid regular expression: missing ), unterminated subpattern at position 7"]),
        (
            {"topic.prefix": "ok", "database.port": "abc", "tombstones.on.delete": "maybe",
             "snapshot.mode": "sometimes", "databse.hostname": "db", "tasks.max": "1"},
            [
                "database.port: 'abc' is not an integer",
                "tombstones.on.delete: 'maybe' is not a boolean (true or false)",
                "snapshot.mode: 'sometimes' is not one of: initial, initial_only, no_data, always, when_needed",
                "databse.hostname: unknown property",
                "tasks.max: unknown property",
            ],
        ),
    ],
)
def test_problems_name_every_bad_property_with_its_reason(props: dict, problems: list[str]) -> None:
    config = Config(props)
    assert config.problems(FIELDS) == problems
    if problems:
        with pytest.raises(ConfigError) as err:
            config.validate(FIELDS)
        assert err.value.problems == problems
        # One problem per line, each indented under the heading.
        assert str(err.value).splitlines() == ["invalid configuration:", *(f"  {p}" for p in problems)]
    else:
        config.validate(FIELDS)


def test_unknown_properties_can_be_left_unchecked() -> None:
    assert Config({"topic.prefix": "ok", "whatever": "1"}).problems(FIELDS, check_unknown=False) == []


def test_mutually_exclusive_properties() -> None:
    config = Config({"table.include.list": "a", "table.exclude.list": "b", "column.include.list": ""})
    pairs = [("table.include.list", "table.exclude.list"), ("column.include.list", "column.exclude.list")]
    assert exclusive(config, pairs) == [
        "table.exclude.list: cannot be used together with table.include.list; set only one of them"
    ]


SECRET = "hunter2-s3cr3t"


@pytest.mark.parametrize(
    "name",
    ["database.password", "database.history.consumer.ssl.key.password", "DATABASE.PASSWORD",
     "sasl.jaas.config", "api.key", "auth.token", "client.secret"],
)
def test_secrets_are_redacted_from_repr_and_redacted(name: str) -> None:
    config = Config({name: SECRET, "database.user": "postgres"})
    assert config.redacted() == {name: "********", "database.user": "postgres"}
    assert SECRET not in repr(config)
    assert "postgres" in repr(config)
    assert config[name] == SECRET  # the value itself is still there for the connector


@pytest.mark.parametrize(
    "field",
    [
        F("database.password", "int"),  # named like a secret
        F("database.password", "string", validator=lambda v: f"{v!r} is too short"),
        F("database.pwd", "password", validator=lambda v: f"{v!r} must have 20 characters"),  # typed as a secret
        F("replica.password.timeout.ms", "int", minimum=1),
    ],
)
def test_invalid_secret_is_reported_without_its_value(field: ConfigField) -> None:
    config = Config({field.name: SECRET if field.type != "int" else "-5" + SECRET})
    problems = config.problems(Fields([field]))
    assert problems == [f"{field.name}: invalid value"]
    with pytest.raises(ConfigError) as err:
        config.validate(Fields([field]))
    assert SECRET not in str(err.value)
    with pytest.raises(ConfigError) as err:
        config.get(field)
    assert err.value.problems == [f"{field.name}: invalid value"]
    assert SECRET not in str(err.value)


def test_subset_and_with_values() -> None:
    config = Config({"driver.ssl": "true", "driver.timeout": "5", "drivers": "x", "a": "1"})
    assert config.subset("driver") == {"ssl": "true", "timeout": "5"}
    changed = config.with_values(**{"a": "2", "b.c": "3"})
    assert changed.get("a") == "2" and changed.get("b.c") == "3"
    assert config.get("a") == "1" and "b.c" not in config
