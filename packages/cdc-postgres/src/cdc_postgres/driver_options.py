"""``driver.*``: the pgjdbc connection properties Debezium passes to its driver, as libpq parameters.

Debezium strips ``driver.`` and hands the rest to pgjdbc. cdc connects through libpq (psycopg), so each
pgjdbc property with a libpq equivalent becomes that parameter (on every connection: queries, snapshot,
replication); the others have no effect, and the connector names them in one warning at start.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from psycopg import pq


def _seconds(value: str) -> str | None:
    """pgjdbc's timeouts are whole seconds (0: none); libpq's ``connect_timeout`` too (0: wait forever)."""
    try:
        seconds = int(float(value))
    except ValueError:
        return None
    return str(max(seconds, 0))


def _boolean(value: str) -> str | None:
    text = value.strip().lower()
    return {"true": "1", "false": "0"}.get(text)


def _ssl(value: str) -> str | None:
    """pgjdbc's ``ssl=true`` without an ``sslmode`` means verify-full (its documented default)."""
    return {"true": "verify-full", "false": "disable"}.get(value.strip().lower())


#: pgjdbc's targetServerType (and its old names) as libpq's target_session_attrs. preferPrimary has none.
_TARGET = {"any": "any", "primary": "read-write", "master": "read-write", "secondary": "standby",
           "standby": "standby", "preferSecondary": "prefer-standby", "preferStandby": "prefer-standby"}

_SAME: Callable[[str], str | None] = str

#: pgjdbc property -> (libpq parameter, value conversion; None from it: the value has no libpq equivalent).
MAPPED: dict[str, tuple[str, Callable[[str], str | None]]] = {
    "ApplicationName": ("application_name", _SAME),
    "connectTimeout": ("connect_timeout", _seconds),
    "loginTimeout": ("connect_timeout", _seconds),
    "options": ("options", _SAME),
    "tcpKeepAlive": ("keepalives", _boolean),
    "ssl": ("sslmode", _ssl),
    "sslmode": ("sslmode", _SAME),
    "sslcert": ("sslcert", _SAME),
    "sslkey": ("sslkey", _SAME),
    "sslrootcert": ("sslrootcert", _SAME),
    "sslpassword": ("sslpassword", _SAME),
    "gssEncMode": ("gssencmode", _SAME),
    "kerberosServerName": ("krbsrvname", _SAME),
    "channelBinding": ("channel_binding", _SAME),
    "targetServerType": ("target_session_attrs", _TARGET.get),
}
if pq.version() >= 160000:
    MAPPED["loadBalanceHosts"] = ("load_balance_hosts", lambda v: {"true": "random", "false": "disable"}.get(v.lower()))
if pq.version() >= 170000:
    MAPPED["sslNegotiation"] = ("sslnegotiation", _SAME)

#: Applied after these, so an explicit libpq-style setting wins over its pgjdbc shorthand.
_LATER = ("sslmode", "connectTimeout")


def libpq_params(driver: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The libpq parameters for ``driver.*`` (prefix stripped), and the properties with no equivalent."""
    params: dict[str, str] = {}
    unmapped: list[str] = []
    for key in sorted(driver, key=lambda k: k in _LATER):
        value = str(driver[key])
        mapping = MAPPED.get(key)
        converted = mapping[1](value) if mapping is not None else None
        if converted is None:
            unmapped.append(f"driver.{key}")
            continue
        params[mapping[0]] = converted
    return params, sorted(unmapped)


def unmapped_warning(unmapped: list[str]) -> str:
    """The start-up warning naming the ``driver.*`` properties that change nothing in cdc."""
    return (f"ignoring {', '.join(unmapped)}: pgjdbc connection properties (or values) with no libpq equivalent; "
            f"cdc maps {len(MAPPED)} driver.* properties to libpq (cdc_postgres.driver_options)")
