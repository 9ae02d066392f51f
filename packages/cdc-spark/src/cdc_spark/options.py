"""The source's options: Debezium connector properties plus a few of the Spark source's own."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cdc_core.config import Config
from cdc_core.config import common
from cdc_core.config.config import is_secret
from cdc_core.engine import connector_class, connector_problems
from cdc_core.errors import ConfigError

#: Options of the Spark source itself (case-insensitive, as Spark passes every option lower-cased).
CONNECTOR = "connector"
TABLE = "table"
MAX_EVENTS_PER_TRIGGER = "maxEventsPerTrigger"
SNAPSHOT_CHUNK_ROWS = "snapshotChunkRows"
MAX_BUFFERED_EVENTS = "maxBufferedEvents"
SNAPSHOT_HOLD_SECONDS = "snapshotHoldSeconds"
EMPTY_BATCH_INTERVAL_MS = "emptyBatchIntervalMs"
CHUNK_REPORT_HOST = "chunkReportHost"
SOURCE_OPTIONS = (CONNECTOR, TABLE, MAX_EVENTS_PER_TRIGGER, SNAPSHOT_CHUNK_ROWS, MAX_BUFFERED_EVENTS,
                  SNAPSHOT_HOLD_SECONDS, EMPTY_BATCH_INTERVAL_MS, CHUNK_REPORT_HOST)
#: Options Spark itself may add, never Debezium properties.
_SPARK_OPTIONS = ("path", "checkpointlocation")


@dataclass(frozen=True)
class SourceOptions:
    """The parsed options: the connector's Config and the source's own settings."""

    config: Config
    table: str | None
    max_events_per_trigger: int | None
    snapshot_chunk_rows: int
    max_buffered_events: int
    snapshot_hold_seconds: float
    #: How often a batch without events may run only to move the offset (so the source releases its log).
    empty_batch_interval_s: float
    key_schemas: bool
    value_schemas: bool
    #: The driver's address executors send chunk-read reports to (``cdc_spark.reports``); None: this host's.
    chunk_report_host: str | None = None
    #: JsonConverter's ``replace.null.with.default`` (``key.converter.`` / ``value.converter.``).
    key_replace_null_with_default: bool = True
    value_replace_null_with_default: bool = True

    @property
    def connector_class(self) -> type:
        """The connector class ``connector.class`` names."""
        return connector_class(self.config)


def _positive_int(options: Mapping[str, Any], name: str, default: int | None, problems: list[str]) -> int | None:
    raw = options.get(name.lower())
    if raw is None or str(raw).strip() == "":
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = 0
    if value < 1:
        problems.append(f"{name}: {raw!r} is not a positive integer")
        return default
    return value


def _bool(config: Config, name: str) -> bool:
    raw = config.get(name)
    return True if raw is None else str(raw).strip().lower() in ("true", "1", "yes", "on")


def canonical_names(options: Mapping[str, Any]) -> dict[str, Any]:
    """Debezium property names with their case restored (Spark lower-cases option keys)."""
    try:
        cls = connector_class(Config(_connector_props(options)))
        names = [f.name for f in common.COMMON_FIELDS] + [f.name for f in cls.fields]
    except ConfigError:
        names = [f.name for f in common.COMMON_FIELDS]
    by_lower = {n.lower(): n for n in names}
    out: dict[str, Any] = {}
    for key, value in options.items():
        if key.lower() in {o.lower() for o in SOURCE_OPTIONS} or key.lower() in _SPARK_OPTIONS:
            continue
        out[by_lower.get(key.lower(), key)] = value
    return out


def _connector_props(options: Mapping[str, Any]) -> dict[str, Any]:
    props = {k: v for k, v in options.items()}
    lower = {k.lower(): v for k, v in options.items()}
    if "connector.class" not in lower and CONNECTOR in lower:
        props["connector.class"] = lower[CONNECTOR]
    elif "connector.class" in lower:
        props["connector.class"] = lower["connector.class"]
    return props


def parse_options(options: Mapping[str, Any]) -> SourceOptions:
    """Parse and validate; raise ConfigError naming every bad option (secrets never shown)."""
    lower = {str(k).lower(): v for k, v in options.items()}
    problems: list[str] = []
    props = canonical_names(lower)
    if CONNECTOR in lower and "connector.class" in lower and lower[CONNECTOR] != lower["connector.class"]:
        problems.append("connector: conflicts with connector.class; set only one of them")
    if "connector.class" not in props and CONNECTOR in lower:
        props["connector.class"] = lower[CONNECTOR]
    config = Config(props)
    problems += connector_problems(config)
    table = lower.get(TABLE.lower())
    if table is not None and str(config.get("transforms") or "").strip():
        # One table's stream is picked by its topic and its typed before/after columns (and apply_changes) read
        # the change event envelope: a chain that re-routes or flattens would break them.
        problems.append("transforms: cannot be combined with table (its typed before/after columns and the "
                        "one-table stream read the change event envelope); read without table to transform")
    if table is not None and (not str(table).strip() or str(table).count(".") < 1):
        problems.append(f"table: {table!r} must name one table as schema.table")
    max_events = _positive_int(lower, MAX_EVENTS_PER_TRIGGER, None, problems)
    chunk_rows = _positive_int(lower, SNAPSHOT_CHUNK_ROWS, 100_000, problems)
    buffered = _positive_int(lower, MAX_BUFFERED_EVENTS, 100_000, problems)
    hold = _positive_int(lower, SNAPSHOT_HOLD_SECONDS, 3600, problems)
    empty_ms = _positive_int(lower, EMPTY_BATCH_INTERVAL_MS, 60_000, problems)
    if problems:
        raise ConfigError(problems)
    return SourceOptions(
        config=config,
        table=str(table).strip() if table is not None else None,
        max_events_per_trigger=max_events,
        snapshot_chunk_rows=chunk_rows or 100_000,
        max_buffered_events=buffered or 100_000,
        snapshot_hold_seconds=float(hold or 3600),
        empty_batch_interval_s=(empty_ms or 60_000) / 1000.0,
        key_schemas=_bool(config, "key.converter.schemas.enable"),
        value_schemas=_bool(config, "value.converter.schemas.enable"),
        key_replace_null_with_default=_bool(config, "key.converter.replace.null.with.default"),
        value_replace_null_with_default=_bool(config, "value.converter.replace.null.with.default"),
        chunk_report_host=str(lower[CHUNK_REPORT_HOST.lower()]).strip() or None if CHUNK_REPORT_HOST.lower() in lower else None,
    )


def redacted(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options with every secret value hidden, for messages and logs."""
    return {k: ("********" if is_secret(str(k)) else v) for k, v in options.items()}
