"""Db2 log sequence numbers (IBMSNAP_COMMITSEQ/INTENTSEQ): 16-byte values written as Debezium's Lsn does.

Debezium's Db2 Lsn prints the hex of the bytes split after the 4th and 8th byte:
``xxxxxxxx:xxxxxxxx:xxxxxxxxxxxxxxxx`` for the 16 bytes SQL Replication uses on LUW.
"""

from __future__ import annotations

from cdc_core.byte_lsn import NULL_TEXT, ByteLsn, grouped_hex

__all__ = ["NULL", "NULL_TEXT", "Lsn", "from_value", "text"]


class Lsn(ByteLsn):
    """A Db2 LSN; any even run of hex digits (colons ignored) parses."""

    __slots__ = ()

    @classmethod
    def decode(cls, text: str) -> bytes:
        """The bytes of ``xxxxxxxx:xxxxxxxx:xxxxxxxxxxxxxxxx``."""
        try:
            return bytes.fromhex(text.replace(":", ""))
        except ValueError:
            raise ValueError(f"{text!r} is not a Db2 LSN (expected xxxxxxxx:xxxxxxxx:xxxxxxxxxxxxxxxx in "
                             "hexadecimal)") from None


NULL = Lsn(None)


def from_value(value: bytes | bytearray | memoryview | None) -> Lsn:
    """An LSN from a ``VARCHAR(16) FOR BIT DATA`` value (None: NULL)."""
    return NULL if value is None else Lsn(bytes(value))


def text(raw: bytes | None) -> str:
    """The text form of raw LSN bytes (``NULL`` for None)."""
    return grouped_hex(raw)
