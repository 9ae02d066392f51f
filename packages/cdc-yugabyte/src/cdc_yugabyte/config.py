"""The YugabyteDB connector's property set: PostgreSQL's, changed and trimmed as the YugabyteDB chapter has it."""

from __future__ import annotations

import re
from typing import Any

from cdc_core.config import ConfigField as F
from cdc_core.config import Config, Fields
from cdc_core.config.formats import PORT_RANGE
from cdc_postgres import config as pgc

#: Only the primary key is ever a YugabyteDB table's identity; CHANGE is YugabyteDB's own (no INDEX).
_AUTOSET_ENTRY = re.compile(r"^\s*(?P<table>[^\s:]+):(?P<identity>DEFAULT|FULL|NOTHING|CHANGE)\s*$", re.I)


def _plugin_supported(value: str) -> str | None:
    """Why ``plugin.name`` cannot be used on YugabyteDB, or None."""
    if value == "decoderbufs":
        return ("'decoderbufs' is not available on YugabyteDB (the chapter's default is a copy of PostgreSQL's); "
                "use plugin.name=yboutput (the default) or pgoutput")
    return None


def autoset_problem(value: str) -> str | None:
    """What is wrong with a YugabyteDB ``replica.identity.autoset.values`` value, or None."""
    if not value.strip():
        return "must not be empty"
    bad = [entry.strip() for entry in value.split(",") if not _AUTOSET_ENTRY.match(entry)]
    if bad:
        index = any(re.search(r":\s*INDEX\b", b, re.I) for b in bad)
        return (f"{', '.join(repr(b) for b in bad)}: not of the form <schema.table regex>:<CHANGE|DEFAULT|FULL|NOTHING>"
                + (" (YugabyteDB has no REPLICA IDENTITY USING INDEX)" if index else ""))
    return None


HOSTNAME = F("database.hostname", "string", "localhost", validator=pgc.hosts_ports_problem, allow_blank=False,
             doc="A host, or host:port pairs separated by commas: a lost node is passed over on reconnect.")
PORT = F("database.port", "int", 5433, minimum=PORT_RANGE[0], maximum=PORT_RANGE[1])
PLUGIN_NAME = F("plugin.name", "enum", "yboutput", allowed=("yboutput", "pgoutput", "decoderbufs"),
                validator=_plugin_supported)
SNAPSHOT_MODE = F("snapshot.mode", "enum", "initial", allowed=("initial", "always", "never", "initial_only", "custom"))
SNAPSHOT_CUSTOM_CLASS = F("snapshot.custom.class", "string",
                          doc="The custom Snapshotter (a cdc snapshotter plugin's name); required with snapshot.mode=custom.")
SLOT_LSN_TYPE = F("slot.lsn.type", "enum", "sequence", allowed=("sequence", "hybrid_time"),
                  doc="The LSN type a new slot is created with (YugabyteDB 2024.2+).")
REPLICA_IDENTITY_AUTOSET = F("replica.identity.autoset.values", "string", validator=autoset_problem)

_REPLACED = {f.name: f for f in (HOSTNAME, PORT, PLUGIN_NAME, SNAPSHOT_MODE, REPLICA_IDENTITY_AUTOSET)}

#: Properties of the PostgreSQL connector the YugabyteDB chapter does not have, refused: honouring them
#: would need a snapshot mode or mechanism YugabyteDB's connector lacks. Value: why.
REFUSED = {
    "snapshot.mode.custom.name": "YugabyteDB's connector names its custom snapshotter with snapshot.custom.class",
    "read.only": "YugabyteDB's connector has no read-only incremental snapshots",
    **{f"snapshot.mode.configuration.based.{p}": "YugabyteDB has no snapshot.mode=configuration_based"
       for p in ("snapshot.data", "snapshot.schema", "start.stream", "snapshot.on.schema.error",
                 "snapshot.on.data.error")},
}

#: Properties the chapter does not have, accepted with a warning: cdc applies them as the PostgreSQL connector does.
WARNED = (
    "heartbeat.interval.ms", "heartbeat.action.query", "topic.heartbeat.prefix", "streaming.delay.ms",
    "database.query.timeout.ms", "hstore.handling.mode", "snapshot.locking.mode", "snapshot.locking.mode.custom.name",
    "snapshot.query.mode", "snapshot.query.mode.custom.name", "snapshot.select.statement.overrides",
    "message.prefix.include.list", "message.prefix.exclude.list",
)

#: The connector's own fields: PostgreSQL's with YugabyteDB's defaults and values, and its own two.
FIELDS = Fields([_REPLACED.get(f.name, f) for f in pgc.FIELDS] + [SNAPSHOT_CUSTOM_CLASS, SLOT_LSN_TYPE],
                pgc.FIELDS.prefixes)


def absent_property_problems(config: Config) -> list[str]:
    """One line per set property the YugabyteDB chapter lacks whose effect cdc cannot give on YugabyteDB."""
    out = []
    for name, why in REFUSED.items():
        value = config.get(name)
        if value in (None, "") or (name == "read.only" and str(value).strip().lower() == "false"):
            continue
        out.append(f"{name}: not a property of the YugabyteDB connector ({why})")
    return out


def absent_property_warnings(config: Config) -> list[str]:
    """The set properties the chapter lacks that cdc still honours, PostgreSQL's way."""
    return [name for name in WARNED if config.get(name) not in (None, "")]


def for_postgres(config: Config) -> Config:
    """The configuration the PostgreSQL connector's code reads: YugabyteDB's defaults filled in, its own names mapped.

    ``snapshot.custom.class`` becomes ``snapshot.mode.custom.name``; ``replica.identity.autoset.values`` is
    applied by the YugabyteDB connector (CHANGE is not PostgreSQL's), so the PostgreSQL code does not see it.
    """
    props: dict[str, Any] = dict(config)
    if props.get("database.port") in (None, ""):
        props["database.port"] = PORT.default
    custom = props.get(SNAPSHOT_CUSTOM_CLASS.name)
    if custom not in (None, ""):
        props["snapshot.mode.custom.name"] = custom
    props.pop(REPLICA_IDENTITY_AUTOSET.name, None)
    props.pop(PLUGIN_NAME.name, None)  # cdc_postgres refuses anything but pgoutput; the YugabyteDB code reads it
    return Config(props)
