"""The signal actions: ``execute-snapshot``, ``stop-snapshot``, ``pause-snapshot``, ``resume-snapshot``, ``log``.

Each validates its ``data`` completely before acting (a SignalDataError refuses the signal with its
reason) and runs on the connector thread through the SignalController.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from cdc_core.config import common
from cdc_core.filters import snapshot_order
from cdc_core.incremental.spi import SIGNAL_TABLE, watermarks_of
from cdc_core.incremental.state import TableScan
from cdc_core.relational import Table, TableId
from cdc_core.signals.conditions import Node, parse_filter
from cdc_core.signals.names import NameMatcher, SignalDataError, select_tables
from cdc_core.signals.spi import SignalRecord
from cdc_core.table_events import key_names, parse_message_key_columns

if TYPE_CHECKING:
    from cdc_core.signals.controller import SignalController


def execute_snapshot(ctl: SignalController, record: SignalRecord, data: dict[str, Any]) -> None:
    """``execute-snapshot``: validate everything, then start an incremental or a blocking snapshot."""
    kind = str(data.get("type") or "incremental").lower()
    if kind not in ("incremental", "blocking"):
        raise SignalDataError(f"snapshot type {data.get('type')!r} is not incremental or blocking")
    if "data-collections" not in data:
        raise SignalDataError("execute-snapshot needs data-collections (an array of table names)")
    if data["data-collections"] == []:
        ctl.log.info("signal %s names no tables: nothing to snapshot", record.id)
        return
    source = ctl.capability()
    if source is None:
        raise SignalDataError(f"the {type(ctl.connector).__name__} connector does not support ad hoc snapshots")
    if kind == "incremental" and ctl.signal_table is None and watermarks_of(source) == SIGNAL_TABLE:
        raise SignalDataError("incremental snapshots need signal.data.collection: their watermarks are written "
                              "to the signal table")
    # As Debezium 2.7.4 (expandAndDedupeDataCollectionIds keeps an entry that matches no table): an entry naming no
    # captured table does not refuse the signal; an incremental snapshot reports it as a TABLE_SCAN_COMPLETED with
    # status UNKNOWN_SCHEMA (isTableInvalid), a blocking one reads the tables the others name.
    unknown: list[str] = []
    tables = select_tables(data["data-collections"], source.captured_tables(), unmatched=unknown)
    for entry in unknown:
        ctl.log.warning("signal %s: data-collections entry %r matches no captured table", record.id, entry)
    conditions = _conditions(data, tables, allow_select=kind == "blocking")
    surrogate = data.get("surrogate-key")
    surrogates: dict[str, str] = {}
    if surrogate is not None:
        if not isinstance(surrogate, str):
            raise SignalDataError("surrogate-key must be a column name")
        for t in tables:
            # Found as Debezium's Table.columnWithName finds it: the exact name, else ignoring case ("aa" is AA).
            names = [c.name for c in t.columns]
            found = surrogate if surrogate in names else next(
                (n for n in names if n.lower() == surrogate.lower()), None)
            if found is None:
                raise SignalDataError(f"surrogate-key {surrogate!r} is not a column of {t.id}")
            surrogates[t.id.identifier] = found
    if kind == "blocking":
        # A blocking snapshot runs as the initial one does (RelationalSnapshotChangeEventSource): tables in
        # table.include.list order, not in the signal's.
        tables = snapshot_order(tables, ctl.config.get(common.TABLE_INCLUDE), lambda t: t.id.identifier)
        ctl.request_blocking(record.id, [(t, *conditions.get(t.id.identifier, (None, None))) for t in tables])
        return
    scans = []
    # Chunks go in the order of the event key (Debezium's getQueryColumns: the surrogate key, else the KeyMapper's
    # columns, message.key.columns' for a table it names, else the primary key).
    key_columns = parse_message_key_columns(ctl.config.get(common.MESSAGE_KEY_COLUMNS))
    for t in tables:
        text, node = conditions.get(t.id.identifier, (None, None))
        column = surrogates.get(t.id.identifier)
        key = [column] if column else list(key_names(key_columns, t))
        scans.append(TableScan(t, key, text, node, column, skip=None if key else "NO_PRIMARY_KEY"))
    ctl.incremental_snapshot().add(record.id, _with_unknown(data["data-collections"], scans, unknown))


def _with_unknown(entries: list[Any], scans: list[TableScan], unmatched: list[str]) -> list[TableScan]:
    """``scans`` with a scan for each entry that names no table, where the entry stands, skipped as UNKNOWN_SCHEMA.

    As Debezium 2.7.4, whose snapshot keeps such a name among its data collections (in STARTED's
    ``data_collections``) and, its turn come, sends TABLE_SCAN_COMPLETED with status UNKNOWN_SCHEMA for it
    (isTableInvalid). cdc passes over every skipped table before reading the others (as NO_PRIMARY_KEY ones).
    """
    if not unmatched:
        return scans
    out: list[TableScan] = []
    placed: set[int] = set()
    for entry in dict.fromkeys(e.strip() for e in entries if isinstance(e, str)):
        if entry in unmatched:
            out.append(TableScan(Table(TableId(None, None, entry), [], []), [], skip="UNKNOWN_SCHEMA"))
            continue
        matcher = NameMatcher(entry)
        for i, scan in enumerate(scans):
            if i not in placed and matcher.matches(scan.table):
                placed.add(i)
                out.append(scan)
    return out + [scan for i, scan in enumerate(scans) if i not in placed]


def stop_snapshot(ctl: SignalController, record: SignalRecord, data: dict[str, Any]) -> None:
    """``stop-snapshot``: ``type`` incremental is required; ``data-collections`` limits it to those tables."""
    if str(data.get("type") or "").lower() != "incremental":
        raise SignalDataError("stop-snapshot needs data.type \"incremental\" (the only kind that can be stopped)")
    inc = ctl.incremental
    if inc is None or not inc.active:
        ctl.log.info("stop-snapshot %s: no incremental snapshot is running", record.id)
        return
    entries = data.get("data-collections")
    names = None
    if entries:
        if not isinstance(entries, list):
            raise SignalDataError("data-collections must be an array of table names")
        matchers = [NameMatcher(e) for e in entries]
        names = {s.name for s in inc.scans if any(m.matches(s.table) for m in matchers)}
    inc.stop(names)


def pause_snapshot(ctl: SignalController, record: SignalRecord, data: dict[str, Any]) -> None:
    """``pause-snapshot``: read no further chunks."""
    if ctl.incremental is None or not ctl.incremental.pause():
        ctl.log.info("pause-snapshot %s: no running incremental snapshot to pause", record.id)


def resume_snapshot(ctl: SignalController, record: SignalRecord, data: dict[str, Any]) -> None:
    """``resume-snapshot``: continue a paused snapshot."""
    if ctl.incremental is None or not ctl.incremental.resume():
        ctl.log.info("resume-snapshot %s: no paused incremental snapshot to resume", record.id)


def log_signal(ctl: SignalController, record: SignalRecord, data: dict[str, Any]) -> None:
    """``log``: write ``data.message`` to the log, as Debezium 2.7.4's Log action: ``LOGGER.info(message, offset)``,
    so a ``{}`` in it is the offset the signal came at (a Java map's text, ``<none>`` without one); a signal without
    a message is refused with a warning (SignalsIT.jmxSignals logs "Signal message at offset ''{}''")."""
    message = data.get("message")
    if not isinstance(message, str) or not message:
        ctl.log.warning("logging signal %s has arrived but the requested field 'message' is missing from data",
                        record.id)
        return
    if "{}" in message:
        offset = getattr(ctl, "_last_offset", None)
        text = "<none>" if offset is None else "{" + ", ".join(f"{k}={v}" for k, v in offset.items()) + "}"
        message = message.replace("{}", text, 1)
    ctl.log.info("%s", message)


def signal_data(record: SignalRecord) -> dict[str, Any]:
    """A signal's ``data`` as an object (it may arrive as JSON text); SignalDataError if it is not one."""
    data = record.data
    if data is None or data == "":
        return {}
    if isinstance(data, (str, bytes)):
        try:
            data = orjson.loads(data)
        except orjson.JSONDecodeError as e:
            raise SignalDataError(f"data is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise SignalDataError(f"data must be a JSON object, not {type(data).__name__}")
    return data


def _conditions(data: dict[str, Any], tables: list[Table], allow_select: bool) -> dict[str, tuple[str, Node]]:
    """Each selected table's parsed filter, from ``additional-conditions`` (or the deprecated ``additional-condition``)."""
    out: dict[str, tuple[str, Node]] = {}
    single = data.get("additional-condition")
    if single not in (None, ""):
        for t in tables:
            out[t.id.identifier] = (single, parse_filter(single, t, allow_select))
    entries = data.get("additional-conditions")
    if entries in (None, []):
        return out
    if not isinstance(entries, list):
        raise SignalDataError("additional-conditions must be an array of {data-collection, filter} objects")
    for entry in entries:
        if not isinstance(entry, dict) or "data-collection" not in entry or "filter" not in entry:
            raise SignalDataError("each additional-conditions entry needs data-collection and filter")
        matcher = NameMatcher(entry["data-collection"])
        matched = [t for t in tables if matcher.matches(t)]
        if not matched:
            raise SignalDataError(f"additional-conditions data-collection {matcher.entry!r} is not one of the tables "
                                  "to snapshot")
        for t in matched:
            out[t.id.identifier] = (entry["filter"], parse_filter(entry["filter"], t, allow_select))
    return out


#: The actions by signal type.
ACTIONS: dict[str, Callable[[SignalController, SignalRecord, dict[str, Any]], None]] = {
    "execute-snapshot": execute_snapshot,
    "stop-snapshot": stop_snapshot,
    "pause-snapshot": pause_snapshot,
    "resume-snapshot": resume_snapshot,
    "log": log_signal,
}
