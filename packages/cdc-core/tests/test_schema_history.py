"""Schema history stores: the file store's JSON lines round trip and corrupt-line errors; the memory store."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc_core.config import Config
from cdc_core.errors import SchemaHistoryError
from cdc_core.stores.file_history import FileSchemaHistoryStore
from cdc_core.stores.memory_history import MemorySchemaHistoryStore

RECORDS = [
    {"source": {"server": "dbserver1"}, "position": {"lsn": 1}, "ddl": "CREATE TABLE a (id int)"},
    {"source": {"server": "dbserver1"}, "position": {"lsn": 2}, "ddl": "ALTER TABLE a ADD b text", "note": "ü"},
]


def file_history(path: Path) -> FileSchemaHistoryStore:
    return FileSchemaHistoryStore(Config({"schema.history.internal.file.filename": str(path)}))


def test_append_then_read_back_in_a_new_instance(tmp_path: Path) -> None:
    path = tmp_path / "history" / "schema.jsonl"
    store = file_history(path)
    assert not store.exists() and list(store.records()) == []
    for record in RECORDS:
        store.append(record)
    assert store.exists()
    assert list(file_history(path).records()) == RECORDS
    assert len(path.read_bytes().splitlines()) == 2  # one JSON document per line


def test_blank_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "schema.jsonl"
    path.write_text('{"a": 1}\n\n   \n{"a": 2}\n', encoding="utf-8")
    assert list(file_history(path).records()) == [{"a": 1}, {"a": 2}]


@pytest.mark.parametrize(
    ("content", "line"),
    [
        ('{"a": 1}\n{"a": \n{"a": 3}\n', 2),
        ('{"a": 1}\n\n{"a": 2}\nnot json\n', 4),
        ('{"a": 1}\n{"a": 2, "ddl": "CREATE TAB', 2),  # a torn last append
    ],
)
def test_corrupt_line_is_an_error_naming_file_and_line(tmp_path: Path, content: str, line: int) -> None:
    path = tmp_path / "schema.jsonl"
    path.write_text(content, encoding="utf-8")
    records = file_history(path).records()
    assert next(records) == {"a": 1}
    with pytest.raises(SchemaHistoryError) as err:
        list(records)
    assert f"schema history file {path} is corrupt at line {line}" in str(err.value)
    assert path.read_text(encoding="utf-8") == content


def test_file_history_needs_a_filename() -> None:
    with pytest.raises(SchemaHistoryError, match="schema.history.internal.file.filename: is required"):
        FileSchemaHistoryStore(Config({}))


def test_memory_history_keeps_copies() -> None:
    store = MemorySchemaHistoryStore()
    assert not store.exists()
    record = {"ddl": "CREATE TABLE a (id int)", "tables": [{"id": "a"}]}
    store.append(record)
    record["tables"].append({"id": "b"})
    [got] = list(store.records())
    got["ddl"] = "changed"
    assert list(store.records()) == [{"ddl": "CREATE TABLE a (id int)", "tables": [{"id": "a"}]}]
    assert store.exists()
