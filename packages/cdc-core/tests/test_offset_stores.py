"""Offset stores: the file store's versioned JSON, atomic replace and corrupt-file refusal; the memory store."""

from __future__ import annotations

import copy
from pathlib import Path

import orjson
import pytest

from cdc_core.config import Config
from cdc_core.errors import OffsetStoreError
from cdc_core.stores.file_offsets import FileOffsetStore
from cdc_core.stores.memory_offsets import MemoryOffsetStore

P1 = {"server": "dbserver1"}
P2 = {"server": "dbserver2", "db": "x"}


def file_store(path: Path) -> FileOffsetStore:
    return FileOffsetStore(Config({"offset.storage.file.filename": str(path)}))


def test_commit_then_reload_in_a_new_instance(tmp_path: Path) -> None:
    path = tmp_path / "state" / "offsets.json"
    store = file_store(path)
    assert store.get(P1) is None and store.all() == []
    store.commit([(P1, {"lsn": 100, "txId": 5})])
    store.commit([(P2, {"pos": 1})])
    store.commit([(P1, {"lsn": 200, "txId": 6, "snapshot": False})])
    reloaded = file_store(path)
    assert reloaded.get(P1) == {"lsn": 200, "txId": 6, "snapshot": False}
    assert reloaded.get({"db": "x", "server": "dbserver2"}) == {"pos": 1}  # partition key order does not matter
    assert reloaded.all() == [(P1, {"lsn": 200, "txId": 6, "snapshot": False}), (P2, {"pos": 1})]


def test_file_is_versioned_human_readable_json(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    file_store(path).commit([(P1, {"lsn": 100})])
    text = path.read_text()
    assert text.count("\n") > 3  # indented for humans
    assert orjson.loads(text) == {"version": 1, "offsets": [{"partition": P1, "offset": {"lsn": 100}}]}


def test_commit_replaces_atomically_and_leaves_no_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    store = file_store(path)
    for n in range(5):
        store.commit([(P1, {"lsn": n})])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["offsets.json"]
    assert file_store(path).get(P1) == {"lsn": 4}


def test_failed_commit_keeps_the_previous_file(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    store = file_store(path)
    store.commit([(P1, {"lsn": 1})])
    before = path.read_bytes()
    with pytest.raises(TypeError):
        store.commit([(P1, {"lsn": object()})])  # not JSON-serializable: nothing is written
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["offsets.json"]
    assert store.get(P1) == {"lsn": 1}


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "is corrupt"),
        (b'{"version": 1, "offsets": [{"partition": {"server": "a"}, "off', "is corrupt"),  # truncated
        (b"\x00\x17garbage\xff", "is corrupt"),
        (b'{"version": 2, "offsets": []}', "is not a cdc offsets file of version 1"),
        (b'{"offsets": []}', "is not a cdc offsets file of version 1"),
        (b"[1, 2, 3]", "is not a cdc offsets file of version 1"),
        (b'{"version": 1, "offsets": {}}', "is not a cdc offsets file of version 1"),
        (b'{"version": 1, "offsets": [{"partition": {"server": "a"}}]}', "entry 0 is malformed"),
        (b'{"version": 1, "offsets": [{"partition": {"a": 1}, "offset": {}}, 5]}', "entry 1 is malformed"),
    ],
    ids=["empty", "truncated", "garbage", "future-version", "no-version", "not-an-object", "offsets-not-a-list",
         "entry-without-offset", "entry-not-an-object"],
)
def test_corrupt_file_is_refused_and_not_overwritten(tmp_path: Path, content: bytes, reason: str) -> None:
    path = tmp_path / "offsets.json"
    path.write_bytes(content)
    with pytest.raises(OffsetStoreError) as err:
        file_store(path)
    assert str(path) in str(err.value)
    assert reason in str(err.value)
    assert "refusing to start" in str(err.value)
    assert path.read_bytes() == content


def test_unreadable_path_is_an_offset_store_error(tmp_path: Path) -> None:
    (tmp_path / "offsets.json").mkdir()
    with pytest.raises(OffsetStoreError, match="cannot read offsets file .*offsets.json"):
        file_store(tmp_path / "offsets.json")


def test_file_store_needs_a_filename() -> None:
    with pytest.raises(OffsetStoreError, match="offset.storage.file.filename: is required"):
        FileOffsetStore(Config({}))


@pytest.mark.parametrize("make", [lambda p: MemoryOffsetStore(), file_store], ids=["memory", "file"])
def test_stored_offsets_are_isolated_from_callers(tmp_path: Path, make) -> None:
    store = make(tmp_path / "offsets.json")
    partition = {"server": "a"}
    offset = {"lsn": 1, "nested": {"xid": [1, 2]}}
    store.commit([(partition, offset)])
    offset["lsn"] = 99
    offset["nested"]["xid"].append(3)
    partition["server"] = "b"
    got = store.get({"server": "a"})
    assert got == {"lsn": 1, "nested": {"xid": [1, 2]}}
    got["nested"]["xid"].clear()
    [(p, o)] = store.all()
    p["server"] = "c"
    o["nested"]["xid"].append(4)
    assert store.all() == [({"server": "a"}, {"lsn": 1, "nested": {"xid": [1, 2]}})]
    assert store.get({"server": "a"}) == {"lsn": 1, "nested": {"xid": [1, 2]}}


def test_memory_stores_are_independent() -> None:
    a, b = MemoryOffsetStore(), MemoryOffsetStore(Config({}))
    a.commit([(P1, {"lsn": 1})])
    assert b.get(P1) is None and b.all() == []
    assert a.get(copy.deepcopy(P1)) == {"lsn": 1}
