"""The property catalogue: every property the specification documents, per connector, and what cdc does with it.

The ``<connector>.yaml`` files beside this module are generated from the specification by
``scripts/generate_catalogue.py``; ``decisions.yaml`` holds the hand-made decisions. A configured
property is sorted into one of three groups (``Report``): errors (invalid or undocumented names,
with a suggestion), refused (documented, not implemented, and ignoring it would change the data
delivered) and accepted without effect (documented, not implemented, harmless to ignore).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from cdc_core.config.fields import Fields

#: What each status means for a configured property.
STATUSES = ("implemented", "owned", "accepted", "refused")


@dataclass(frozen=True)
class Entry:
    """One documented property (or templated family, with ``pattern``) and cdc's decision about it."""

    name: str
    default: str | None
    status: str
    reason: str = ""
    pattern: re.Pattern[str] | None = None
    line: int | None = None

    def matches(self, name: str) -> bool:
        """True if ``name`` is this property (or one of its templated family)."""
        return name == self.name if self.pattern is None else bool(self.pattern.fullmatch(name))

    def is_default(self, value: Any) -> bool:
        """True if ``value`` is the documented default (so ignoring the property changes nothing)."""
        if self.default is None or value is None:
            return False
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        return text.strip().lower() == self.default.strip().lower()


@dataclass
class Report:
    """A configuration's problems in three groups, each line naming the property."""

    errors: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    #: Documented properties cdc accepts without effect (names only).
    ignored: list[str] = field(default_factory=list)
    #: Why each accepted property has no effect, by name (where the catalogue says).
    reasons: dict[str, str] = field(default_factory=dict)

    @property
    def problems(self) -> list[str]:
        """What stops a start: the errors, then the refused properties."""
        return self.errors + self.refused

    def warning(self) -> str | None:
        """The one start-up warning about the accepted properties, or None."""
        if not self.ignored:
            return None
        return f"accepted, no effect in cdc: {', '.join(self.ignored)}"


#: libyaml's loader where PyYAML has it (several times faster: the catalogue is read at every start).
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _read(name: str) -> Any:
    return yaml.load(resources.files(__name__).joinpath(name).read_text(encoding="utf-8"), Loader=_LOADER)  # noqa: S506


@lru_cache(maxsize=None)
def _decisions() -> dict[str, Any]:
    return _read("decisions.yaml")


@lru_cache(maxsize=None)
def _owned() -> tuple[tuple[re.Pattern[str], str], ...]:
    return tuple((re.compile(o["pattern"]), o["reason"]) for o in _decisions()["owned"])


@lru_cache(maxsize=None)
def renamed() -> dict[str, str]:
    """Pre-2.0 property names and their Debezium 2.x names (``*`` ends a prefix)."""
    return dict(_decisions().get("renamed", {}))


class Catalogue:
    """The documented properties of one connector (``mysql``, ``mariadb``, ``postgres``) or of the ``server``."""

    def __init__(self, connector: str, entries: list[Entry]):
        self.connector = connector
        self.entries = entries
        self._by_name = {e.name: e for e in entries if e.pattern is None}
        self._patterns = [e for e in entries if e.pattern is not None]

    @classmethod
    @lru_cache(maxsize=None)
    def load(cls, connector: str) -> Catalogue | None:
        """The catalogue of ``connector``, or None if the specification documents none for it."""
        path = resources.files(__name__).joinpath(f"{connector}.yaml")
        if not path.is_file():
            return None
        data = _read(f"{connector}.yaml")
        entries = [
            Entry(p["name"], None if p.get("default") is None else str(p["default"]), p["status"], p.get("reason", ""),
                  re.compile(p["pattern"]) if p.get("pattern") else None, p.get("line"))
            for p in data["properties"]
        ]
        return cls(connector, entries)

    def find(self, name: str) -> Entry | None:
        """The entry documenting ``name``, or None."""
        found = self._by_name.get(name)
        if found is not None:
            return found
        return next((e for e in self._patterns if e.matches(name)), None)

    def names(self) -> list[str]:
        """Every documented plain property name (the candidates of a suggestion)."""
        return list(self._by_name)


def owner(name: str) -> str | None:
    """The part of cdc that owns ``name`` (transforms, signals, stores, ...), or None."""
    return next((reason for pattern, reason in _owned() if pattern.fullmatch(name)), None)


def suggestion(name: str, candidates: list[str], display: Any = lambda name: name) -> str:
    """``; did you mean X?`` for the closest candidate (difflib), or an empty string."""
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.75)
    return f"; did you mean {display(close[0])}?" if close else ""


def _renamed_to(name: str) -> str | None:
    for old, new in renamed().items():
        if old.endswith(".*") and name.startswith(old[:-1]):
            return new[:-1] + name[len(old) - 1:]
        if name == old:
            return new
    return None


def classify(props: dict[str, Any], fields: Fields, catalogue: Catalogue | None,
             display: Any = lambda name: name) -> Report:
    """Sort configured properties into errors (undocumented), refused and accepted without effect.

    ``fields`` are what cdc validates (and so implements); ``display`` gives the name as the user
    wrote it (``debezium.source.`` in the server layout). Values are checked by ``Config.problems``.
    """
    report = Report()
    for name, value in props.items():
        entry = catalogue.find(name) if catalogue is not None else None
        if entry is not None and entry.status == "accepted":
            report.ignored.append(display(name))
            report.reasons[display(name)] = entry.reason
            continue
        if entry is not None and entry.status == "refused":
            if entry.is_default(value):
                report.ignored.append(display(name))
                report.reasons[display(name)] = f"set to its default, {entry.default}"
            else:
                report.refused.append(f"{display(name)}: documented, but cdc does not implement it, and ignoring it "
                                      f"would change the data delivered ({entry.reason})")
            continue
        if fields.knows(name) or owner(name) is not None:
            continue
        if entry is not None:  # documented and implemented elsewhere, not in this build
            if entry.status != "owned":
                report.ignored.append(display(name))
                report.reasons[display(name)] = "not in this build of cdc"
            continue
        new = _renamed_to(name)
        if new is not None:
            report.errors.append(f"{display(name)}: renamed {display(new)} in Debezium 2.0")
            continue
        candidates = [f.name for f in fields] + (catalogue.names() if catalogue is not None else [])
        report.errors.append(f"{display(name)}: unknown property{suggestion(name, candidates, display)}")
    return report
