"""Parsing a transform's or predicate's options: typed, validated, unknown names refused."""

from __future__ import annotations

import re
from typing import Any

from cdc_core.config import Config, Fields
from cdc_core.config.fields import ConfigField
from cdc_core.errors import ConfigError
from cdc_core.transforms.java_regex import java_pattern

#: Keys of ``transforms.<alias>.*`` the chain itself reads (not options of the transform).
CHAIN_KEYS = frozenset({"type", "predicate", "negate"})


def regex_problem(value: Any) -> str | None:
    """Why ``value`` is not a regular expression (Java's syntax as far as Python's ``re`` reads it), or None."""
    try:
        java_pattern(value)
    except re.error as e:
        return f"{value!r} is not a valid regular expression: {e}"
    return None


def options(config: Config, fields: Fields, *, check_unknown: bool = True) -> dict[str, Any]:
    """The parsed value of every field (its default when unset); ConfigError naming each bad option.

    Names in the error are relative (``topic.regex``); the chain prefixes ``transforms.<alias>.``.
    """
    own = Config({k: v for k, v in config.items() if k not in CHAIN_KEYS})
    problems = own.problems(fields, check_unknown=check_unknown)
    if problems:
        raise ConfigError(problems)
    return {f.name: own.get(f) for f in fields}


def field(name: str, type: str = "string", default: Any = None, **kw: Any) -> ConfigField:  # noqa: A002
    """A ConfigField (shorthand for the option tables of the transforms)."""
    return ConfigField(name, type, default, **kw)


def required(name: str, **kw: Any) -> ConfigField:
    """A required string option that may not be blank."""
    return ConfigField(name, "string", None, required=True, allow_blank=False, **kw)


def regex(name: str, required_: bool = True) -> ConfigField:
    """A regular-expression option."""
    return ConfigField(name, "string", None, required=required_, allow_blank=not required_, validator=regex_problem)
