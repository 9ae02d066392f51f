"""Reading configuration files (.properties, YAML, JSON) into one flat dict of dotted names."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from cdc_core.errors import ConfigError

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_HEX = frozenset("0123456789abcdefABCDEF")
_SURROGATE = re.compile("[\ud800-\udfff]")


def join_surrogates(text: str) -> str:
    """Join UTF-16 surrogate pairs into one character, as a Java String holds them (``\\uD83D\\uDE00`` is one emoji).

    Java's ``Properties`` writes every character outside Latin-1 as ``\\uXXXX`` escapes, so a
    character beyond the BMP arrives as two escapes. A surrogate without its pair stays as it is
    (and the property catalogue refuses it, naming the property).
    """
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """Flatten nested mappings into dotted names: ``{"a": {"b": 1}}`` -> ``{"a.b": 1}``; lists join with commas."""
    out: dict[str, Any] = {}
    if isinstance(data, dict):
        for k, v in data.items():
            name = f"{prefix}.{k}" if prefix else str(k)
            name = join_surrogates(name)
            if isinstance(v, dict):
                out.update(flatten(v, name))
            elif isinstance(v, list):
                out[name] = join_surrogates(",".join(str(x) for x in v))
            else:
                out[name] = join_surrogates(v) if isinstance(v, str) else v
    return out


def parse_properties(text: str, source: str = "<string>") -> dict[str, str]:
    """Parse Java .properties text: ``key=value``, ``key: value`` or ``key value``; # and ! comments; \\ continuations."""
    out: dict[str, str] = {}
    logical = ""
    first = 0
    for lineno, line in enumerate(text.splitlines(), 1):
        # Leading whitespace never counts; a line continues only if its very last character is an
        # unescaped backslash (so an escaped trailing space, ``a=x\\ ``, does not continue).
        stripped = line.lstrip()
        if not logical and (not stripped or stripped[0] in "#!"):
            continue
        first = first or lineno
        trailing = len(stripped) - len(stripped.rstrip("\\"))
        if trailing % 2 == 1:
            logical += stripped[:-1]
            continue
        logical += _rstrip_unescaped(stripped)
        _store(out, logical, source, first)
        logical, first = "", 0
    if logical:
        _store(out, logical, source, first)
    return out


def _rstrip_unescaped(line: str) -> str:
    """Drop trailing whitespace, but not an escaped space (``\\ ``) at the end."""
    end = len(line)
    while end and line[end - 1] in " \t\f":
        backslashes = len(line[: end - 1]) - len(line[: end - 1].rstrip("\\"))
        if backslashes % 2 == 1:
            break
        end -= 1
    return line[:end]


def _store(out: dict[str, str], logical: str, source: str, lineno: int) -> None:
    try:
        key, value = _split_property(logical)
    except ValueError:
        # The value may be a secret: name the place, never the text.
        raise ConfigError([f"{source}: line {lineno}: malformed \\uXXXX escape"]) from None
    out[key] = value


def _split_property(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=:" or ch.isspace():
            key = line[:i]
            rest = line[i:].lstrip()
            if rest[:1] in ("=", ":"):
                rest = rest[1:].lstrip()
            return _unescape(key), _unescape(rest)
        i += 1
    return _unescape(line), ""


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out: list[str] = []
    i = 0
    while i < len(s):
        ch = s[i]
        if ch == "\\" and i + 1 < len(s):
            nxt = s[i + 1]
            if nxt == "u":
                digits = s[i + 2 : i + 6]
                if len(digits) < 4 or not all(d in _HEX for d in digits):
                    raise ValueError(f"malformed \\uXXXX escape: {digits!r}")
                out.append(chr(int(digits, 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return join_surrogates("".join(out))


def load_file(path: str | Path) -> dict[str, Any]:
    """Load a configuration file by its extension (.properties, .yaml/.yml, .json) into a flat dict."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError([f"cannot read configuration file {p}: {e.strerror}"]) from None
    except UnicodeDecodeError as e:
        raise ConfigError([f"{p}: not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start}); "
                           "write configuration files in UTF-8 (or with \\uXXXX escapes)"]) from None
    if "\0" in text:
        raise ConfigError([f"{p}: contains NUL bytes at offset {text.index(chr(0))}: not a configuration file"])
    suffix = p.suffix.lower()
    if suffix in (".yaml", ".yml"):
        import yaml

        try:
            data = yaml.safe_load(text) or {}
        except yaml.YAMLError as e:
            raise ConfigError([f"{p}: not valid YAML: {e}"]) from None
        if not isinstance(data, dict):
            raise ConfigError([f"{p}: expected a mapping of properties at the top level"])
        return flatten(data)
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigError([f"{p}: not valid JSON at line {e.lineno} column {e.colno}: {e.msg}"]) from None
        if not isinstance(data, dict):
            raise ConfigError([f"{p}: expected a JSON object of properties"])
        return flatten(data)
    return parse_properties(text, str(p))
