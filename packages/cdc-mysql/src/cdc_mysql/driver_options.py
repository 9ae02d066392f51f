"""``driver.*`` on MySQL/MariaDB: Connector/J's connection properties of a Debezium configuration, as PyMySQL's.

Debezium strips ``driver.`` and hands the rest to MySQL Connector/J (its JDBC connections: snapshot,
schema reads, incremental snapshots; the binlog client has its own socket). cdc passes PyMySQL's own
options by name, turns the Connector/J properties PyMySQL has an equivalent for into those options, and
names the rest in one warning at start.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any


def _seconds(value: str) -> float | None:
    """Connector/J's timeouts are milliseconds (0: none); PyMySQL's are seconds."""
    try:
        ms = int(value)
    except ValueError:
        return None
    return None if ms < 0 else ms / 1000.0


def _whole_seconds(value: str) -> int | None:
    seconds = _seconds(value)
    return None if seconds is None else max(1, math.ceil(seconds)) if seconds else None


def _session_variables(value: str) -> str | None:
    """``sessionVariables=a=1,b='x'``: Connector/J runs ``SET SESSION a=1,b='x'`` on every new connection."""
    text = value.strip()
    return f"SET SESSION {text}" if text else None


def _public_key_retrieval(value: str) -> dict[str, Any] | None:
    """PyMySQL always asks the server for its RSA key when caching_sha2 needs one: ``true`` is what it does."""
    return {} if value.strip().lower() == "true" else None


#: Connector/J property -> the PyMySQL options it becomes (None: the value has no PyMySQL equivalent).
MAPPED: dict[str, Callable[[str], dict[str, Any] | None]] = {
    "connectTimeout": lambda v: None if (s := _whole_seconds(v)) is None else {"connect_timeout": s},
    # A socket read or write waiting longer fails (Connector/J's SO_TIMEOUT); the binlog connection keeps its own.
    "socketTimeout": lambda v: None if not (s := _seconds(v)) else {"read_timeout": s, "write_timeout": s},
    "sessionVariables": lambda v: None if (c := _session_variables(v)) is None else {"init_command": c},
    "allowPublicKeyRetrieval": _public_key_retrieval,
}


def pymysql_args(driver: Mapping[str, Any], known: frozenset[str]) -> tuple[dict[str, Any], list[str]]:
    """PyMySQL options for ``driver.*`` (prefix stripped): PyMySQL's own by name, Connector/J's mapped; and
    the properties that have no equivalent."""
    args: dict[str, Any] = {}
    unmapped: list[str] = []
    for key, value in driver.items():
        if key in known:
            args.setdefault(key, value)
            continue
        mapping = MAPPED.get(key)
        converted = mapping(str(value)) if mapping is not None else None
        if converted is None:
            unmapped.append(f"driver.{key}")
            continue
        for name, option in converted.items():
            if name not in driver:  # PyMySQL's own spelling, when given too, wins
                args[name] = option
    return args, sorted(unmapped)
