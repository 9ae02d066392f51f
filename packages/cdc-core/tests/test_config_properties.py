"""Java .properties parsing, driven by tests/data/properties_cases.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cdc_core.config import load_file
from cdc_core.config.loader import parse_properties
from cdc_core.errors import ConfigError

CASES = yaml.safe_load((Path(__file__).parent / "data" / "properties_cases.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_properties_text_parses_like_java(case: dict) -> None:
    assert parse_properties(case["text"]) == case["expected"]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_properties_file_parses_like_text(case: dict, tmp_path: Path) -> None:
    path = tmp_path / "app.properties"
    path.write_bytes(case["text"].encode("utf-8"))
    assert load_file(path) == case["expected"]


def test_unescaped_trailing_whitespace_of_a_value_is_dropped() -> None:
    assert parse_properties("a=v   \nb=w\t\n") == {"a": "v", "b": "w"}


@pytest.mark.parametrize("text", ["a=\\uZZZZ", "a=\\u12", "a=x\\u00"])
def test_malformed_unicode_escape_is_a_config_error_naming_file_and_line(text: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.properties"
    path.write_text("# header\nok=1\n" + text + "\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_file(path)
    assert err.value.problems == [f"{path}: line 3: malformed \\uXXXX escape"]


def test_malformed_escape_in_a_secret_does_not_quote_the_secret() -> None:
    with pytest.raises(ConfigError) as err:
        parse_properties("database.password=hunter2\\uZZ", source="app.properties")
    assert "hunter2" not in str(err.value)
