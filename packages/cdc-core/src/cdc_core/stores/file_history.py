"""The file schema history store: one JSON record per line, appended and fsynced."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import orjson

from cdc_core.config import Config
from cdc_core.config.common import SCHEMA_HISTORY_FILE
from cdc_core.errors import SchemaHistoryError


class FileSchemaHistoryStore:
    """Schema history in ``schema.history.internal.file.filename``, one JSON document per line."""

    name: ClassVar[str] = "file"
    class_names: ClassVar[tuple[str, ...]] = ("io.debezium.storage.file.history.FileSchemaHistory",)

    def __init__(self, config: Config):
        filename = config.get(SCHEMA_HISTORY_FILE)
        if not filename:
            raise SchemaHistoryError(f"{SCHEMA_HISTORY_FILE.name}: is required by the file schema history")
        self.path = Path(filename)

    def append(self, record: dict[str, Any]) -> None:
        """Append one record and fsync it."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "ab") as f:
                f.write(orjson.dumps(record) + b"\n")
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            raise SchemaHistoryError(f"cannot append to schema history file {self.path}: {e.strerror}") from e

    def records(self) -> Iterator[dict[str, Any]]:
        """Every record in order; SchemaHistoryError naming the file and line if one is corrupt."""
        try:
            f = open(self.path, "rb")
        except FileNotFoundError:
            return
        except OSError as e:
            raise SchemaHistoryError(f"cannot read schema history file {self.path}: {e.strerror}") from e
        with f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    yield orjson.loads(line)
                except orjson.JSONDecodeError as e:
                    raise SchemaHistoryError(f"schema history file {self.path} is corrupt at line {lineno}: {e}") from None

    def exists(self) -> bool:
        """True if the file holds at least one record."""
        return self.path.exists() and self.path.stat().st_size > 0

    def close(self) -> None:
        """Nothing to release: every append is already on disk."""
