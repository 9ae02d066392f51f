"""The log-position capability: where a connector's log is now, and whether a stream has got there.

Runtimes that must stop at "what exists now" (Spark's ``Trigger.AvailableNow``) take the current
position once when they start and test each offset the connector delivers against it. A connector
offers it by naming a class in its ``log_position`` class attribute, or, without touching the
connector, by a ``log_position`` attribute in the ``position`` module next to the connector's
module (``cdc_postgres.position`` for ``cdc_postgres.connector``). The engine never needs it.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from cdc_core.config import Config
from cdc_core.spi.capability import capability_for


@runtime_checkable
class LogPosition(Protocol):
    """A connector's current log position and the test of an offset against it (optional capability).

    ``__init__`` does no I/O. ``current_position`` asks the database where its log ends now: every
    transaction committed before the call lies before that position. ``reached(offset, position)``
    is True when a stream that delivered everything up to and including ``offset`` has delivered
    every change committed before ``position``, and no change delivered together with ``offset``
    (the records an offset closes: a change, a delete and its tombstone, ...) was committed before
    it. It is False for snapshot offsets and for offsets it cannot judge. A runtime stops at the
    first offset that reached the position and leaves out the records that came with it, so its
    output is exactly what was committed before the start; a checkpoint that closes no records
    (a commit, an idle position) is where such a stop lands most of the time.
    Positions are small JSON-compatible dicts.
    """

    def __init__(self, config: Config) -> None: ...

    def current_position(self) -> dict[str, Any]:
        """The end of the log now (connects to the database)."""

    def reached(self, offset: dict[str, Any] | None, position: dict[str, Any]) -> bool:
        """True once a stream delivered up to ``offset`` is past ``position`` (see the class docstring)."""


def log_position_for(connector_class: type) -> type | None:
    """The LogPosition class a connector offers, or None if it offers none."""
    return capability_for(connector_class, "log_position", "position")
