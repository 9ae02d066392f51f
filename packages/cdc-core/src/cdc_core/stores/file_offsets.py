"""The file offset store: versioned JSON, replaced atomically (temp file, fsync, rename)."""

from __future__ import annotations

import copy
import os
import tempfile
from pathlib import Path
from typing import Any, ClassVar

import orjson

from cdc_core.config import Config
from cdc_core.config.common import OFFSET_FILE
from cdc_core.errors import OffsetStoreError

FORMAT_VERSION = 1


def _key(partition: dict[str, Any]) -> bytes:
    return orjson.dumps(partition, option=orjson.OPT_SORT_KEYS)


def read_offsets_file(path: Path) -> dict[bytes, tuple[dict[str, Any], dict[str, Any]]]:
    """Read and check an offsets file; OffsetStoreError naming the file if it is corrupt."""
    try:
        data = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise OffsetStoreError(f"cannot read offsets file {path}: {e.strerror}") from None
    except orjson.JSONDecodeError as e:
        raise OffsetStoreError(
            f"offsets file {path} is corrupt ({e}); refusing to start. Restore it from a backup, "
            "or delete it to start over deliberately (a new snapshot, per snapshot.mode)."
        ) from None
    if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION or not isinstance(data.get("offsets"), list):
        raise OffsetStoreError(
            f"offsets file {path} is not a cdc offsets file of version {FORMAT_VERSION}; refusing to start"
        )
    out = {}
    for i, entry in enumerate(data["offsets"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("partition"), dict) or not isinstance(entry.get("offset"), dict):
            raise OffsetStoreError(f"offsets file {path}: entry {i} is malformed; refusing to start")
        out[_key(entry["partition"])] = (entry["partition"], entry["offset"])
    return out


class FileOffsetStore:
    """Offsets in a JSON file (``offset.storage.file.filename``), rewritten atomically on each commit."""

    name: ClassVar[str] = "file"
    class_names: ClassVar[tuple[str, ...]] = ("org.apache.kafka.connect.storage.FileOffsetBackingStore",)

    def __init__(self, config: Config):
        filename = config.get(OFFSET_FILE)
        if not filename:
            raise OffsetStoreError(f"{OFFSET_FILE.name}: is required by the file offset store")
        self.path = Path(filename)
        self._offsets = read_offsets_file(self.path)

    def get(self, partition: dict[str, Any]) -> dict[str, Any] | None:
        """The stored offset of ``partition``, or None."""
        found = self._offsets.get(_key(partition))
        return copy.deepcopy(found[1]) if found else None

    def all(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Every stored ``(partition, offset)`` pair."""
        return copy.deepcopy(list(self._offsets.values()))

    def commit(self, offsets: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
        """Merge these offsets and replace the file atomically: temp file, fsync, rename, fsync dir."""
        merged = dict(self._offsets)
        for partition, offset in offsets:
            # Copies: a caller changing its dicts later must not change what is stored.
            merged[_key(partition)] = (copy.deepcopy(partition), copy.deepcopy(offset))
        doc = {"version": FORMAT_VERSION, "offsets": [{"partition": p, "offset": o} for p, o in merged.values()]}
        data = orjson.dumps(doc, option=orjson.OPT_INDENT_2)
        directory = self.path.parent
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=directory)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            dfd = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError as e:
            raise OffsetStoreError(f"cannot write offsets file {self.path}: {e.strerror}") from e
        self._offsets = merged

    def close(self) -> None:
        """Nothing to release: every commit is already on disk."""
