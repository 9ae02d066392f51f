"""The SQL a Db2 platform (``db2.platform``) needs where LUW and z/OS differ: one module per platform."""

from __future__ import annotations

from cdc_db2.dialects.base import Dialect
from cdc_db2.dialects.luw import Luw
from cdc_db2.dialects.zos import ZOs

#: ``db2.platform`` (lower case) to its dialect.
DIALECTS: dict[str, Dialect] = {"luw": Luw(), "zos": ZOs()}


def dialect(platform: str) -> Dialect:
    """The dialect of a ``db2.platform`` value (any case)."""
    return DIALECTS[platform.lower()]


__all__ = ["DIALECTS", "Dialect", "Luw", "ZOs", "dialect"]
