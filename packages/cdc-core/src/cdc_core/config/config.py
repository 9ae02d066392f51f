"""A set of property values with typed, validated access; secrets never appear in its text."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cdc_core.config.fields import ConfigField, Fields, InvalidValue
from cdc_core.errors import ConfigError

#: Property names whose values are secrets wherever they appear (passwords of any subsystem).
SECRET_MARKERS = ("password", "secret", "credentials", "sasl.jaas.config", "token", "api.key", "user.info")


def is_secret(name: str) -> bool:
    """True if the property called ``name`` holds a secret that must never be printed."""
    lower = name.lower()
    return any(m in lower for m in SECRET_MARKERS)


class Config(Mapping[str, Any]):
    """Raw property values by name, with typed access through ConfigFields.

    Values stay as given (strings from .properties, scalars from YAML/JSON) until ``get`` parses
    them; parsed values are cached. ``repr`` and ``redacted`` hide every secret.
    """

    def __init__(self, props: Mapping[str, Any] | None = None):
        self._props: dict[str, Any] = {str(k): v for k, v in (props or {}).items()}
        self._cache: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        return self._props[name]

    def __iter__(self):
        return iter(self._props)

    def __len__(self) -> int:
        return len(self._props)

    def __repr__(self) -> str:
        return f"Config({self.redacted()!r})"

    def get(self, key: ConfigField | str, default: Any = None) -> Any:  # type: ignore[override]
        """The value of a field, parsed to its type (its default when unset), or a raw value by name."""
        if isinstance(key, str):
            return self._props.get(key, default)
        if key.name in self._cache:
            return self._cache[key.name]
        raw = self._props.get(key.name)
        if raw is None or (isinstance(raw, str) and raw == "" and key.type != "string" and key.allow_blank):
            value = key.default
        else:
            try:
                value = key.parse(raw)
            except InvalidValue as e:
                # As in ``problems``: the reason quotes the value, and a secret's value is never shown.
                reason = "invalid value" if key.secret or is_secret(key.name) else e
                raise ConfigError([f"{key.name}: {reason}"]) from None
        self._cache[key.name] = value
        return value

    def subset(self, prefix: str) -> dict[str, Any]:
        """The properties under ``prefix`` (a trailing dot is added), with the prefix removed."""
        if not prefix.endswith("."):
            prefix += "."
        return {k[len(prefix) :]: v for k, v in self._props.items() if k.startswith(prefix)}

    def with_values(self, **overrides: Any) -> Config:
        """A copy with some properties replaced (dotted names passed as a dict via ``**{...}``)."""
        return Config({**self._props, **overrides})

    def redacted(self) -> dict[str, Any]:
        """The properties with every secret value replaced by ``********``."""
        return {k: ("********" if is_secret(k) else v) for k, v in self._props.items()}

    def problems(self, fields: Fields, *, check_unknown: bool = True) -> list[str]:
        """Every invalid, missing or unknown property, one line each, naming it and the reason."""
        out: list[str] = []
        for f in fields:
            raw = self._props.get(f.name)
            if raw is None or raw == "":
                if f.required and f.default is None:
                    out.append(f"{f.name}: is required and has no value")
                elif raw == "" and not f.allow_blank:
                    out.append(f"{f.name}: must not be empty")
                continue
            try:
                f.parse(raw)
            except InvalidValue as e:
                # The reason quotes the value; a secret's value is never shown.
                out.append(f"{f.name}: {'invalid value' if f.secret or is_secret(f.name) else e}")
        if check_unknown:
            for name in self._props:
                if not fields.knows(name):
                    out.append(f"{name}: unknown property")
        return out

    def validate(self, fields: Fields, *, check_unknown: bool = True) -> None:
        """Raise ConfigError listing every problem ``problems`` finds."""
        found = self.problems(fields, check_unknown=check_unknown)
        if found:
            raise ConfigError(found)


def exclusive(config: Config, pairs: Iterable[tuple[str, str]]) -> list[str]:
    """Problems for mutually exclusive pairs (e.g. ``table.include.list`` with ``table.exclude.list``)."""
    out = []
    for a, b in pairs:
        if config.get(a) not in (None, "") and config.get(b) not in (None, ""):
            out.append(f"{b}: cannot be used together with {a}; set only one of them")
    return out
