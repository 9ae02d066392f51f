"""``slot.stream.params``: options passed to the decoding plug-in at START_REPLICATION, as Debezium passes them.

Debezium splits the value at ``;`` into ``key=value`` pairs and hands them to the plug-in with the
stream's own options, which win. cdc refuses the pgoutput options it sets or decodes by itself
(a different value would change what it can read) and passes the rest through; the server refuses
an option its pgoutput does not know, and that refusal names the property. pgoutput's own
options: ``proto_version``, ``publication_names`` (10), ``binary``, ``messages``, ``streaming``
(14), ``two_phase`` (15), ``origin`` (16: ``none`` leaves out changes replicated from elsewhere).
"""

from __future__ import annotations

#: pgoutput options cdc sets or depends on, and why a user's value cannot stand.
RESERVED = {
    "proto_version": "cdc chooses the protocol version it decodes",
    "publication_names": "set publication.name instead",
    "messages": "cdc always asks for logical decoding messages; filter them with message.prefix.include.list "
                "or message.prefix.exclude.list",
    "streaming": "cdc decides whether in-progress transactions are streamed (on from PostgreSQL 14)",
    "binary": "cdc decodes pgoutput's text format only",
    "two_phase": "cdc does not decode prepared-transaction messages",
}


def parse_stream_params(value: str | None) -> dict[str, str]:
    """``a=1;b=2`` as ``{"a": "1", "b": "2"}`` (empty entries skipped); ValueError names a malformed entry."""
    params: dict[str, str] = {}
    for entry in (value or "").split(";"):
        if not entry.strip():
            continue
        key, sep, val = entry.partition("=")
        if not sep or not key.strip() or "=" in val:
            raise ValueError(f"{entry!r} is not key=value (entries are separated by ';')")
        params[key.strip()] = val.strip()
    return params


def stream_params_problem(value: str) -> str | None:
    """Why ``value`` cannot be used as ``slot.stream.params``, or None."""
    try:
        params = parse_stream_params(value)
    except ValueError as e:
        return str(e)
    for key in params:
        why = RESERVED.get(key.lower())
        if why is not None:
            return f"{key!r} is an option cdc sets for pgoutput itself: {why}"
    return None
