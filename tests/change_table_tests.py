"""What the Db2 and SQL Server tests share: both capture change tables, so their events and checks are alike."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from kit.engine import WAIT_S, EngineThread, run_until

from cdc_core.engine import Engine
from cdc_core.errors import ConfigError, ConnectorError
from cdc_core.events import ChangeRecord
from cdc_core.stores.memory_offsets import MemoryOffsetStore

#: The password of the refusal tests: it must never appear in an error or a log.
SECRET = "s3cr3t-Pa55"


def field(type_: str, name: str, optional: bool = False, **extra: Any) -> dict[str, Any]:
    """A Connect schema field as JsonConverter prints it."""
    return {"type": type_, "optional": optional, **extra, "field": name}


def customers_value(topic: str, columns: tuple[str, str, str, str]) -> dict[str, Any]:
    """The Value schema of the chapters' customers table: an int32 id, then three strings (the columns as spelled)."""
    return {"type": "struct", "fields": [field("int32", columns[0]), *(field("string", c) for c in columns[1:])],
            "optional": True, "name": f"{topic}.Value"}


def source_schema(connector: str, *extra: dict[str, Any]) -> dict[str, Any]:
    """The source block's schema of a change-table connector (``db2``, ``sqlserver``): the common fields, the LSNs,
    then ``extra``."""
    return {"type": "struct", "fields": [
        field("string", "version"), field("string", "connector"), field("string", "name"), field("int64", "ts_ms"),
        {"type": "string", "optional": True, "name": "io.debezium.data.Enum", "version": 1,
         "parameters": {"allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"},
         "default": "false", "field": "snapshot"},
        field("string", "db"), field("string", "sequence", True), field("int64", "ts_us", True),
        field("int64", "ts_ns", True), field("string", "schema"), field("string", "table"),
        field("string", "change_lsn", True), field("string", "commit_lsn", True), *extra],
        "optional": False, "name": f"io.debezium.connector.{connector}.Source", "field": "source"}


def start_error(config: dict[str, Any]) -> str:
    """The error the engine stops with at start: one line (a ConfigError: its heading and one problem), no SECRET."""
    with pytest.raises((ConnectorError, ConfigError)) as info:
        Engine(config, offset_store=MemoryOffsetStore()).run(lambda records: None)
    message = str(info.value)
    lines = message.strip().splitlines()
    assert len(lines) == (2 if isinstance(info.value, ConfigError) else 1) and SECRET not in message
    return message


def run(config: dict[str, Any], store: Any, until: Callable[[list[ChangeRecord]], bool],
        action: Callable[[], Any] | None = None, timeout: float = WAIT_S) -> list[ChangeRecord]:
    """The records of one engine run on the offsets ``store`` until ``until(records)`` (``action()`` once streaming)."""
    return run_until(config, until, "the expected records", action=action, offsets=store, timeout=timeout).records


def without_schema_changes(records: list[ChangeRecord]) -> list[ChangeRecord]:
    """The records but the schema change events."""
    return [r for r in records if not str(getattr(r.value_schema, "name", "") or "").endswith(".SchemaChangeValue")]


def assert_chapter_events(create: ChangeRecord, update: ChangeRecord, delete: ChangeRecord, tombstone: ChangeRecord,
                          value: dict[str, Any], source: dict[str, Any], john: dict[str, Any], email: str,
                          sources: list[dict[str, Any]], lsn: re.Pattern[str]) -> None:
    """The chapter's create, update and delete of ``john`` (``email`` set to noreply@example.org), and the tombstone.

    ``value``/``source``: the Value and source schemas; ``sources``: per event, the source fields expected as given.
    """
    # The value schema, the same for every operation.
    envelope = create.value_schema.to_json()
    assert envelope["name"] == value["name"].removesuffix(".Value") + ".Envelope" and envelope["optional"] is False
    fields = {f["field"]: f for f in envelope["fields"]}
    assert [f["field"] for f in envelope["fields"]] == ["before", "after", "source", "transaction", "op", "ts_ms",
                                                        "ts_us", "ts_ns"]
    assert fields["before"] == {**value, "field": "before"} and fields["after"] == {**value, "field": "after"}
    assert fields["source"] == source
    assert fields["op"] == field("string", "op")
    assert [fields[k] for k in ("ts_ms", "ts_us", "ts_ns")] == [field("int64", k, True) for k in ("ts_ms", "ts_us", "ts_ns")]
    assert update.value_schema.to_json() == envelope == delete.value_schema.to_json()
    # The payloads.
    assert (create.value["before"], create.value["after"], create.value["op"]) == (None, john, "c")
    assert (update.value["before"], update.value["after"], update.value["op"]) == (
        john, {**john, email: "noreply@example.org"}, "u")
    assert (delete.value["before"], delete.value["after"], delete.value["op"]) == (
        {**john, email: "noreply@example.org"}, None, "d")
    key = next(iter(john))
    assert tombstone.key == {key: john[key]} and tombstone.value is None
    for record, expected in zip((create, update, delete), sources, strict=True):
        got = record.value["source"]
        assert list(got) == [f["field"] for f in source["fields"]]
        assert {k: got[k] for k in expected} == expected
        assert got["version"] == "2.7.0.Final"
        assert lsn.fullmatch(got["change_lsn"]) and lsn.fullmatch(got["commit_lsn"])
        assert got["change_lsn"] < got["commit_lsn"]  # a change is logged before its commit
        assert got["ts_us"] == got["ts_ms"] * 1000 + got["ts_us"] % 1000
        assert got["ts_ns"] == got["ts_us"] * 1000
        # The commit time (the change table's) is before the connector saw the change.
        assert got["ts_ms"] <= record.value["ts_ms"] <= got["ts_ms"] + 30000
    assert create.value["source"]["commit_lsn"] < update.value["source"]["commit_lsn"] < delete.value["source"]["commit_lsn"]


def run_through_a_server_restart(config: dict[str, Any], server: Any, insert: Callable[[int], Any],
                                 rows: Callable[[list[ChangeRecord]], int],
                                 streaming_first: bool) -> list[ChangeRecord]:
    """The records of a run in which ``insert(i)`` adds rows 0-19, ``server`` restarts, then rows 20-39 follow.

    ``rows(records)``: how many of the rows arrived; ``streaming_first``: insert only once streaming is connected
    (else the first rows may land in the snapshot and its handoff).
    """
    runner = EngineThread(config).start()
    try:
        if streaming_first:
            runner.wait_streaming()
        for i in range(20):
            insert(i)
        runner.wait(lambda rs: rows(rs) >= 20, "the 20 rows before the restart", 60)
        server.restart()
        for i in range(20, 40):
            insert(i)
        runner.wait(lambda rs: rows(rs) >= 40, "the 40 rows after the restart", 60)
    finally:
        runner.stop()
    return runner.records
