"""Property definitions: a name, a type, a default, the allowed values and how to check them."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


class InvalidValue(ValueError):
    """A property value cannot be parsed; the message is the reason."""


_INTEGER = re.compile(r"[+-]?[0-9]+")
#: Java's int and long ranges, as Kafka's ConfigDef parses INT and LONG properties.
RANGES = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
#: The longest duration a ``*.ms`` property may give: 100 years (Python's waits end at about 292 years).
MAX_DURATION_MS = 100 * 365 * 24 * 3600 * 1000
_SURROGATE = re.compile("[\ud800-\udfff]")


def _parse_int(raw: str) -> int:
    # ASCII digits only: Python's int() would also take other scripts' digits and "1_000".
    text = raw.strip()
    if not _INTEGER.fullmatch(text):
        raise InvalidValue(f"{raw!r} is not an integer")
    return int(text)


def text_problem(raw: str) -> str | None:
    """Why a configured text cannot be used as is (a NUL, or a UTF-16 surrogate without its pair), or None."""
    if "\0" in raw:
        return "contains a NUL character"
    if _SURROGATE.search(raw):
        return "contains a lone UTF-16 surrogate (a \\uD800-\\uDFFF escape without its pair), which is not text"
    return None


def _parse_double(raw: str) -> float:
    try:
        return float(raw.strip())
    except ValueError:
        raise InvalidValue(f"{raw!r} is not a number") from None


def _parse_bool(raw: str) -> bool:
    v = raw.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise InvalidValue(f"{raw!r} is not a boolean (true or false)")


def _parse_list(raw: str) -> list[str]:
    return [p.strip() for p in raw.split(",") if p.strip()]


def _parse_regex_list(raw: str) -> list[re.Pattern[str]]:
    # Debezium splits regex lists on commas that are not escaped with a backslash, and matches them
    # case-insensitively (Predicates.includes/excludes: Strings.setOfRegex(..., Pattern.CASE_INSENSITIVE)):
    # Db2ConnectorIT's table.include.list=db2inst1.tableb captures DB2INST1.TABLEB.
    out = []
    for part in re.split(r"(?<!\\),", raw):
        part = part.strip().replace("\\,", ",")
        if not part:
            continue
        try:
            out.append(re.compile(part, re.IGNORECASE))
        except re.error as e:
            raise InvalidValue(f"{part!r} is not a valid regular expression: {e}") from None
    return out


PARSERS: dict[str, Callable[[str], Any]] = {
    "string": str,
    "password": str,
    "int": _parse_int,
    "long": _parse_int,
    "double": _parse_double,
    "boolean": _parse_bool,
    "list": _parse_list,
    "regex-list": _parse_regex_list,
    "enum": str,
}


@dataclass(frozen=True)
class ConfigField:
    """One configuration property as Debezium defines it.

    ``type`` is one of string, password, int, long, double, boolean, list, regex-list, enum.
    ``allowed`` lists an enum's values; ``aliases`` maps accepted legacy values to their
    canonical one (``never`` -> ``no_data``). ``validator`` returns a reason string when a parsed
    value is invalid. ``secret`` values are never printed. Integers must lie in Java's range of
    their type and in ``minimum``..``maximum``; a ``*.ms`` duration is at most ``MAX_DURATION_MS``.
    """

    name: str
    type: str = "string"
    default: Any = None
    doc: str = ""
    allowed: tuple[str, ...] = ()
    aliases: dict[str, str] = field(default_factory=dict)
    required: bool = False
    validator: Callable[[Any], str | None] | None = None
    minimum: int | float | None = None
    maximum: int | float | None = None
    #: False where an empty or blank value can never work (a slot name, a host name).
    allow_blank: bool = True

    @property
    def secret(self) -> bool:
        """True for passwords and other values that must never be printed."""
        return self.type == "password"

    def parse(self, raw: Any) -> Any:
        """Parse a raw value (str, or a YAML/JSON scalar) into the field's type; InvalidValue if bad."""
        if raw is None:
            return self.default
        if isinstance(raw, bool):
            raw = "true" if raw else "false"
        elif not isinstance(raw, str):
            raw = str(raw)
        problem = text_problem(raw)
        if problem:
            raise InvalidValue(problem)
        if not self.allow_blank and not raw.strip():
            raise InvalidValue("must not be empty")
        value = PARSERS[self.type](raw)
        if self.type == "enum":
            value = value.strip().lower()
            value = self.aliases.get(value, value)
            if self.allowed and value not in self.allowed:
                raise InvalidValue(f"{raw!r} is not one of: {', '.join(self.allowed)}")
        if self.minimum is not None and value < self.minimum:
            raise InvalidValue(f"{raw!r} is below the minimum {self.minimum}")
        if self.type in RANGES:
            low, high = RANGES[self.type]
            if self.maximum is not None:
                high = min(high, self.maximum)
            elif self.name.endswith(".ms"):
                high = min(high, MAX_DURATION_MS)
            if value > high:
                raise InvalidValue(f"{raw!r} is above the maximum {high}")
            if value < low:
                raise InvalidValue(f"{raw!r} is below the minimum {low}")
        elif self.maximum is not None and value > self.maximum:
            raise InvalidValue(f"{raw!r} is above the maximum {self.maximum}")
        if self.validator is not None:
            reason = self.validator(value)
            if reason:
                raise InvalidValue(reason)
        return value


class Fields:
    """An ordered set of ConfigFields, looked up by name, plus the prefixes of free-form properties."""

    def __init__(self, fields: Iterable[ConfigField] = (), prefixes: Iterable[str] = ()):
        self._by_name: dict[str, ConfigField] = {}
        self.prefixes: list[str] = list(prefixes)
        for f in fields:
            self._by_name[f.name] = f

    def __iter__(self) -> Iterator[ConfigField]:
        return iter(self._by_name.values())

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> ConfigField:
        return self._by_name[name]

    def get(self, name: str) -> ConfigField | None:
        """Return the field called ``name``, or None."""
        return self._by_name.get(name)

    def __add__(self, other: Fields) -> Fields:
        return Fields([*self, *other], [*self.prefixes, *other.prefixes])

    def knows(self, name: str) -> bool:
        """True if ``name`` is a defined property or starts with a free-form prefix."""
        return name in self._by_name or any(name.startswith(p) for p in self.prefixes)
