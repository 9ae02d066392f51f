"""A test-time switch: every batch ``JsonSerializer`` writes is checked against JsonConverter's grammar.

``CDC_CHECK_JSON=1`` in the environment when ``cdc_core.serializers.json`` is imported wraps
``JsonSerializer.serialize`` (the root ``conftest.py`` sets it, and ``cdc run`` subprocesses of
the tests inherit it): a record JsonConverter would not have written raises AssertionError.
The engine also serializes (and so checks) every batch it hands to a handler of the library API
(``wrap_handler``), so tests that look at records rather than bytes check them too; cdc-spark's
stream framing is checked through ``check_bytes``.
``CDC_CHECK_JSON=/some/file`` appends the problems to that file instead and goes on (to survey a
whole run). Unset, nothing is wrapped and nothing costs anything.

``CDC_CHECK_JSON_KNOWN`` names a file of known problems (one regular expression a line, matched
against the start of each problem; ``#`` comments give the reason): those are left out, so a
known, reasoned finding waits for its fix without failing every test that meets it.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any

from cdc_core.serializers.grammar import record_problems

ENV = "CDC_CHECK_JSON"
KNOWN_ENV = "CDC_CHECK_JSON_KNOWN"


def known_problems() -> re.Pattern[str] | None:
    """The known problems of ``CDC_CHECK_JSON_KNOWN`` as one pattern (None: none)."""
    path = os.environ.get(KNOWN_ENV)
    if not path:
        return None
    with open(path, encoding="utf-8") as f:
        lines = [line.strip() for line in f]
    patterns = [line for line in lines if line and not line.startswith("#")]
    return re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None


def _report(problems: list[str], known: re.Pattern[str] | None, log_path: str | None) -> None:
    """Raise (or log) the problems that are not known ones."""
    if known is not None:
        problems = [p for p in problems if not known.match(p)]
    if not problems:
        return
    unique = list(dict.fromkeys(problems))
    if log_path is None:
        raise AssertionError("JsonConverter would not write this:\n" + "\n".join(unique[:20]))
    with open(log_path, "a", encoding="utf-8") as f:
        f.writelines(p + "\n" for p in unique)


_BYTES_VERDICTS: dict[bytes, list[str]] = {}


def check_bytes(data: bytes | None, schemas_enable: bool, what: str) -> None:
    """Check one serialized key or value written outside ``JsonSerializer`` (a no-op unless switched on)."""
    setting = os.environ.get(ENV, "")
    if setting:
        log_path = None if setting in ("1", "true", "yes") else setting
        _report(record_problems(data, schemas_enable, what, _BYTES_VERDICTS), known_problems(), log_path)


def install(serializer_class: Any) -> None:
    """Wrap ``serializer_class.serialize`` with the check (once)."""
    setting = os.environ.get(ENV, "")
    if not setting or getattr(serializer_class.serialize, "checked", False):
        return
    log_path = None if setting in ("1", "true", "yes") else setting
    serialize = serializer_class.serialize
    verdicts: dict[bytes, list[str]] = {}
    known = known_problems()

    @functools.wraps(serialize)
    def checked(self: Any, records: list) -> list:
        out = serialize(self, records)
        key_on, value_on = self.schemas_enable
        problems: list[str] = []
        for r in out:
            problems += record_problems(r.key, key_on, f"{r.topic} key", verdicts)
            problems += record_problems(r.value, value_on, f"{r.topic} value", verdicts)
        _report(problems, known, log_path)
        return out

    checked.checked = True  # type: ignore[attr-defined]
    serializer_class.serialize = checked


def wrap_handler(handler: Any) -> Any:
    """``handler`` preceded by serializing its batch as the default ``JsonSerializer`` would (checked)."""
    from cdc_core.serializers.json import JsonSerializer

    serializer = JsonSerializer()

    def checked_handler(records: list) -> Any:
        serializer.serialize(records)
        return handler(records)

    return checked_handler
