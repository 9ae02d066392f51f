"""SQL Server log sequence numbers: 10-byte values written ``xxxxxxxx:xxxxxxxx:xxxx`` as Debezium's Lsn does."""

from __future__ import annotations

from typing import NamedTuple

SIZE = 10
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
        parts = text.split(":")
        if len(parts) != 3 or [len(p) for p in parts] != [8, 8, 4]:
            raise ValueError(f"{text!r} is not an LSN (expected xxxxxxxx:xxxxxxxx:xxxx in hexadecimal)")
        return cls(bytes.fromhex("".join(parts)))

    @property
    def available(self) -> bool:
        """True unless this is the NULL LSN."""
        return self.raw is not None

    def __str__(self) -> str:
        """Debezium's text form, ``NULL`` for the NULL LSN."""
        if self.raw is None:
            return NULL_TEXT
        h = self.raw.hex()
        return f"{h[:8]}:{h[8:16]}:{h[16:]}"

    def key(self) -> bytes:
        """A sort key: unsigned byte order, the NULL LSN first."""
        return self.raw if self.raw is not None else b""


NULL = Lsn(None)


def from_value(value: bytes | bytearray | memoryview | None) -> Lsn:
    """An LSN from a ``binary(10)`` column value (None: NULL)."""
    if value is None:
        return NULL
    data = bytes(value)
    if len(data) != SIZE:
        raise ValueError(f"an LSN has {SIZE} bytes, got {len(data)}")
    return Lsn(data)


def text(value: bytes | None) -> str | None:
    """The text form of a ``binary(10)`` value, None for NULL (as the ``source`` block writes it)."""
    return None if value is None else str(from_value(value))
