"""The signal contract: a signal record and the channels that deliver them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from cdc_core.config import Config


@dataclass
class SignalRecord:
    """One signal: ``id`` (free text, for logs), ``type`` (the action) and ``data`` (a JSON string or object).

    ``channel`` names the channel it came through. ``data`` is untrusted input: actions validate
    every value in it against the captured tables and never put its text into SQL.
    """

    id: str
    type: str
    data: Any = None
    channel: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class SignalChannel(Protocol):
    """A source of signals, selected by name in ``signal.enabled.channels``.

    The core polls ``read()`` on the connector thread between batches (so it must not block),
    dispatches what it returns in order, then calls ``commit()``: a channel that can remember
    what it delivered (a file position) does so there, so a restart does not run a signal again.
    The ``source`` channel is the exception that proves the rule: the core offers it the signal
    table's rows as it sees them in the change stream, and it hands them back through ``read()``.
    """

    #: The name that selects it in ``signal.enabled.channels``.
    name: ClassVar[str]

    def __init__(self, config: Config, log: Any) -> None: ...

    def read(self) -> list[SignalRecord]:
        """The signals that arrived since the last call (non-blocking)."""

    def commit(self) -> None:
        """Everything ``read`` returned so far was dispatched."""

    def close(self) -> None:
        """Release files or connections."""
