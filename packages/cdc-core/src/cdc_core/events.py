"""The two event shapes: a connector's ``RawChange`` and the core's ``ChangeRecord``.

Payload values are JSON-ready: exactly the values Kafka's JsonConverter writes (base64 strings
for bytes and Connect decimals, ints for temporal types, ...). Converters produce them once, so
serializers never walk the payload again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Sequence

from cdc_core.relational import Table
from cdc_core.schema import Schema


class Unavailable:
    """The sentinel for a column value the log did not carry (an unchanged TOASTed value)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNAVAILABLE"


UNAVAILABLE = Unavailable()


class RawChange(NamedTuple):
    """One row change as a connector reads it, before the core turns it into an event.

    ``before``/``after`` hold raw column values in ``table.columns`` order (None for SQL NULL,
    ``UNAVAILABLE`` for a value the log did not carry). ``source`` is the ``source`` block payload,
    ``offset`` the connector offset that is safe to commit once this change and every change
    before it are acknowledged by the sink. ``op`` is one of ``c``, ``u``, ``d``, ``r``, ``t``.
    ``transaction_id`` names the change's transaction (MySQL the GTID or ``file:pos``, which is also
    the id Debezium writes in transaction metadata); None outside a transaction (snapshots).
    ``transaction_event_id`` is the id written in this change's ``transaction`` block where it
    differs per event (PostgreSQL: ``"<txId>:<LSN of the change>"``); None: ``transaction_id``.
    """

    table: Table
    op: str
    before: Sequence[Any] | None
    after: Sequence[Any] | None
    source: dict[str, Any]
    offset: dict[str, Any]
    transaction_id: str | None = None
    transaction_event_id: str | None = None


@dataclass(slots=True)
class ChangeRecord:
    """A record ready for a sink: topic, key and value payloads with their schemas, and headers.

    Connectors may also yield ChangeRecords themselves, for events that are not row changes
    (schema change events, logical decoding messages); the core passes them through as they are.

    ``value`` None is a tombstone. ``offset`` is the connector offset to commit once this record
    and all records before it have been acknowledged; ``partition`` names whose offset it is.

    ``header_schemas`` holds the Connect schema of each header that has one (a Kafka Connect header
    is a value with its schema), for header converters with ``schemas.enable`` (Debezium Server's
    default). It is a separate mapping, None on the records that carry no header (most records),
    so those pay nothing; a header without an entry has no schema (``"schema":null``). Whatever
    sets a header sets or removes its schema entry.
    """

    topic: str
    key: dict[str, Any] | None
    value: dict[str, Any] | None
    key_schema: Schema | None
    value_schema: Schema | None
    offset: dict[str, Any] | None = None
    headers: dict[str, Any] = field(default_factory=dict)
    partition: dict[str, Any] | None = None
    header_schemas: dict[str, Schema] | None = None

    def set_header_schemas(self, schemas: dict[str, Schema | None]) -> None:
        """Record the schemas of headers just set (None: the header has no schema)."""
        current = self.header_schemas
        merged = dict(current) if current else {}
        for name, schema in schemas.items():
            if schema is None:
                merged.pop(name, None)
            else:
                merged[name] = schema
        self.header_schemas = merged or None


_new_object = object.__new__


def new_record(topic: str, key: dict[str, Any] | None, value: dict[str, Any] | None, key_schema: Schema | None,
               value_schema: Schema | None, offset: dict[str, Any] | None, headers: dict[str, Any],
               partition: dict[str, Any] | None) -> ChangeRecord:
    """``ChangeRecord(...)`` with every field but ``header_schemas`` given, for the envelope's hot loops: the
    slots are set here instead of through ``type.__call__`` and the dataclass ``__init__`` (50 ns less a record)."""
    r = _new_object(ChangeRecord)
    r.topic = topic
    r.key = key
    r.value = value
    r.key_schema = key_schema
    r.value_schema = value_schema
    r.offset = offset
    r.headers = headers
    r.partition = partition
    r.header_schemas = None
    return r


# new_record sets every field: a field added to ChangeRecord must be added there too.
assert ChangeRecord.__slots__ == ("topic", "key", "value", "key_schema", "value_schema", "offset", "headers",
                                  "partition", "header_schemas"), "new_record must set every ChangeRecord field"


class Checkpoint(NamedTuple):
    """An offset with no record: committed once everything before it is acknowledged.

    Connectors yield it (inside a batch) to record progress that produced no event: the end of
    a snapshot of empty tables, a committed transaction (``transaction_end`` names it, so the core
    can write its END event), or an idle position (the core turns it into a heartbeat when one
    is due). Sinks never see a Checkpoint itself. ``transaction_event_id`` is the id written on
    the END event where it differs from ``transaction_end`` (PostgreSQL: ``"<txId>:<commit end LSN>"``).
    """

    offset: dict[str, Any]
    transaction_end: str | None = None
    ts_ms: int | None = None
    transaction_event_id: str | None = None
    #: Whose offset it is, for a connector of several partitions (``Connector.partitions``); None: the connector's.
    partition: dict[str, Any] | None = None
    #: A snapshot's end: a heartbeat is written here whatever the interval, when heartbeats are on (Debezium 2.7.4's
    #: RelationalSnapshotChangeEventSource.doExecute ends with dispatcher.alwaysDispatchHeartbeatEvent).
    heartbeat: bool = False


class TransactionBegin(NamedTuple):
    """A transaction's start, announced by a connector that sees it in the log (PostgreSQL's BEGIN).

    With ``provide.transaction.metadata`` the core writes its BEGIN event here, also for a
    transaction that then has no data event (only a logical decoding message, a skipped TRUNCATE,
    changes of tables not captured); without it, the core drops it. It carries no offset.
    Connectors that do not announce transactions get a BEGIN before their first data event.
    ``event_id`` is the id written on the BEGIN event (None: ``transaction_id``).
    """

    transaction_id: str
    ts_ms: int | None = None
    event_id: str | None = None

    @property
    def offset(self) -> None:
        """No offset: a BEGIN is never a position to resume from."""
        return None


class PartitionBatch(list):
    """A batch of a connector of several partitions (``Connector.partitions``): its items and whose they are."""

    __slots__ = ("partition",)

    def __init__(self, items: Sequence[Any], partition: dict[str, Any]):
        super().__init__(items)
        self.partition = partition


class RoundEnd(list):
    """The end of a poll round: an empty batch a connector whose streaming loop pauses for a blocking snapshot
    only between rounds (``pauses_at_round_end``: SQL Server, Db2) yields after each one.

    Debezium's SqlServerChangeEventSourceCoordinator runs one streaming iteration per partition, then checks
    ``context.isPaused()``: the signal controller runs a requested blocking snapshot at this marker, not at the
    signal. ``partitions``: the partitions the round polled (None: the connector's only one); ``positions``:
    connector-specific, where each partition's stream stood at the round's end (SQL Server: its
    ``(change_lsn, commit_lsn, event_serial_no)`` by database). Being empty, it is skipped by anything else.
    """

    __slots__ = ("partitions", "positions")

    def __init__(self, partitions: list[dict[str, Any]] | None = None, positions: dict[str, Any] | None = None):
        super().__init__()
        self.partitions = partitions
        self.positions = positions


def partition_key(partition: dict[str, Any]) -> bytes:
    """A partition's identity as a dict key (its JSON with sorted keys, as the offset stores key it)."""
    import orjson

    return orjson.dumps(partition, option=orjson.OPT_SORT_KEYS)
