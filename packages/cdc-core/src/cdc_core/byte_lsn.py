"""Log positions held as raw bytes and written as grouped hex, as Debezium's SQL Server and Db2 Lsn do."""

from __future__ import annotations

from typing import NamedTuple

#: The string Debezium writes for a missing LSN (Lsn.NULL.toString()).
NULL_TEXT = "NULL"


def grouped_hex(raw: bytes | None) -> str:
    """Debezium's text form of raw LSN bytes: hex split after the 4th and 8th byte (``NULL`` for None)."""
    if raw is None:
        return NULL_TEXT
    h = raw.hex()
    if len(h) < 16:  # Lsn.toString puts a ':' after the 4th and 8th byte only: 0x01 is "01", 4 bytes "xxxxxxxx:"
        return h if len(h) < 8 else f"{h[:8]}:{h[8:]}"
    return f"{h[:8]}:{h[8:16]}:{h[16:]}"


class ByteLsn(NamedTuple):
    """An LSN; ``raw`` None is the NULL LSN, smaller than every other one.

    A database's Lsn subclasses this (``__slots__ = ()``) and gives ``decode``: how its
    non-NULL text form becomes bytes, and what error a malformed one raises.
    """

    raw: bytes | None

    @classmethod
    def parse(cls, text: str | None) -> ByteLsn:
        """An LSN from Debezium's text form (``NULL`` or None: the NULL LSN)."""
        if text is None or text == NULL_TEXT:
            return cls(None)
        return cls(cls.decode(text))

    @classmethod
    def decode(cls, text: str) -> bytes:
        """The bytes of a non-NULL text form; ValueError naming the expected shape when malformed."""
        raise NotImplementedError

    @property
    def available(self) -> bool:
        """True unless this is the NULL LSN."""
        return self.raw is not None

    def __str__(self) -> str:
        """Debezium's text form, ``NULL`` for the NULL LSN."""
        return grouped_hex(self.raw)

    def key(self) -> bytes:
        """A sort key: unsigned byte order, the NULL LSN first."""
        return self.raw if self.raw is not None else b""
