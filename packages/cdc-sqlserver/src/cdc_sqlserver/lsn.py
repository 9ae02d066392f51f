"""SQL Server log sequence numbers: 10-byte values written ``xxxxxxxx:xxxxxxxx:xxxx`` as Debezium's Lsn does."""

from __future__ import annotations

from cdc_core.byte_lsn import NULL_TEXT, ByteLsn

__all__ = ["NULL", "NULL_TEXT", "SIZE", "Lsn", "from_value", "text"]

SIZE = 10


class Lsn(ByteLsn):
    """A SQL Server LSN; its text form is exactly ``xxxxxxxx:xxxxxxxx:xxxx``."""

    __slots__ = ()

    @classmethod
    def decode(cls, text: str) -> bytes:
        """The bytes of ``xxxxxxxx:xxxxxxxx:xxxx``."""
        parts = text.split(":")
        if len(parts) != 3 or [len(p) for p in parts] != [8, 8, 4]:
            raise ValueError(f"{text!r} is not an LSN (expected xxxxxxxx:xxxxxxxx:xxxx in hexadecimal)")
        return bytes.fromhex("".join(parts))


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
