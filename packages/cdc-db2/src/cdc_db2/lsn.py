"""Db2 log sequence numbers (IBMSNAP_COMMITSEQ/INTENTSEQ): 16-byte values written as Debezium's Lsn does.

Debezium's Db2 Lsn prints the hex of the bytes split after the 4th and 8th byte:
``xxxxxxxx:xxxxxxxx:xxxxxxxxxxxxxxxx`` for the 16 bytes SQL Replication uses on LUW.
"""

from __future__ import annotations

from typing import NamedTuple

#: The string Debezium writes for a missing LSN (Lsn.NULL.toString()).
NULL_TEXT = "NULL"


class Lsn(NamedTuple):
    """An LSN; ``raw`` None is the NULL LSN, smaller than every other one."""

    raw: bytes | None

    @classmethod
    def parse(cls, text: str | None) -> Lsn:
        """An LSN from Debezium's text form (``NULL`` or None: the NULL LSN)."""
        if text is None or text == NULL_TEXT:
            return NULL
        try:
            return cls(bytes.fromhex(text.replace(":", "")))
        except ValueError:
            raise ValueError(f"{text!r} is not a Db2 LSN (expected xxxxxxxx:xxxxxxxx:xxxxxxxxxxxxxxxx in "
                             "hexadecimal)") from None

    @property
    def available(self) -> bool:
        """True unless this is the NULL LSN."""
        return self.raw is not None

    def __str__(self) -> str:
        """Debezium's text form, ``NULL`` for the NULL LSN."""
        return text(self.raw)

    def key(self) -> bytes:
        """A sort key: unsigned byte order, the NULL LSN first."""
        return self.raw if self.raw is not None else b""


NULL = Lsn(None)


def from_value(value: bytes | bytearray | memoryview | None) -> Lsn:
    """An LSN from a ``VARCHAR(16) FOR BIT DATA`` value (None: NULL)."""
    return NULL if value is None else Lsn(bytes(value))


def text(raw: bytes | None) -> str:
    """The text form of raw LSN bytes (``NULL`` for None)."""
    if raw is None:
        return NULL_TEXT
    h = raw.hex()
    return f"{h[:8]}:{h[8:16]}:{h[16:]}"
