"""The Db2 connector's schema history: each schema change event's ``tableChanges`` with its offset, replayed on restart.

Records are Debezium's history record shape (``source``, ``position``, ``databaseName``, ``ddl`` null,
``tableChanges``) plus ``version``. A restart replays the records at or before the stored offset into
the definitions last announced, so changes made while the connector was down come out as schema
change events (CREATE, ALTER) when streaming starts; DROP records of earlier cdc versions are still read.
The store is the engine's if it gives one, else ``schema.history.internal`` (``cdc_core.stores.configured_history``).
"""

from __future__ import annotations

from typing import Any

from cdc_core.errors import SchemaHistoryError
from cdc_db2.lsn import Lsn

_AFTER_ALL = b"\xff" * 17


def _position(offset: dict[str, Any]) -> tuple[bytes, bytes]:
    """An offset's place in commit order (a snapshot's covers its whole commit LSN)."""
    change = Lsn.parse(offset.get("change_lsn"))
    return Lsn.parse(offset.get("commit_lsn")).key(), change.raw if change.available else _AFTER_ALL


def replay(store: Any, offset: dict[str, Any]) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """The definitions announced at or before ``offset``: ``schema.table`` to ``(schema, table, definition)``."""
    upto = _position(offset)
    known: dict[str, tuple[str, str, dict[str, Any]]] = {}
    for record in store.records():
        try:
            if _position(record["position"]) > upto:
                continue
            for change in record["tableChanges"]:
                schema, name = (p.strip('"') for p in change["id"].split('"."'))
                if change["type"] == "DROP":
                    known.pop(f"{schema}.{name}", None)
                else:
                    known[f"{schema}.{name}"] = (schema, name, change["table"])
        except (KeyError, ValueError, TypeError) as e:
            raise SchemaHistoryError(f"a Db2 schema history record cannot be read ({e!r}): {record!r:.200}") from None
    return known
