"""Formats a property value must have before anything connects: host names, ports, identifiers."""

from __future__ import annotations

import ipaddress
import re

_LABEL = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")
#: TCP ports a server can listen on.
PORT_RANGE = (1, 65535)


def host_problem(value: str) -> str | None:
    """Why ``value`` is not a host name, IPv4 or IPv6 address (an internationalized name is fine), or None."""
    host = value.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        ipaddress.ip_address(host)
        return None
    except ValueError:
        pass
    try:
        ascii_name = host.encode("idna").decode("ascii")
    except UnicodeError:
        return f"{value!r} is not a host name or IP address"
    labels = ascii_name[:-1].split(".") if ascii_name.endswith(".") else ascii_name.split(".")
    if not ascii_name or len(ascii_name) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        return f"{value!r} is not a host name or IP address"
    return None


def hosts_problem(value: str) -> str | None:
    """Like ``host_problem`` for libpq's host: a comma-separated list of hosts or Unix socket directories."""
    for host in value.split(","):
        if host.startswith("/"):
            continue  # a Unix socket directory
        problem = host_problem(host)
        if problem:
            return problem
    return None


def name_bytes_problem(value: str, limit: int = 63) -> str | None:
    """Why ``value`` is too long for a PostgreSQL/MySQL identifier of ``limit`` bytes (UTF-8), or None."""
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > limit:
        return f"{value!r} is {size} bytes long; the server keeps at most {limit}"
    return None
