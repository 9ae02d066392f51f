"""TIMESTAMP's ZonedTimestamp text (``cdc_mysql.types.zoned_timestamp_micros``): the fast path (datetime's formatting,
years 1-9999) writes what the calendar arithmetic writes, for every column width, padded and unpadded (snapshot)."""

from __future__ import annotations

import random

import pytest

from cdc_core import semantic as sem
from cdc_mysql import types as T


def _reference(width: int):
    """The calendar arithmetic the converter used for every value before (and still uses outside years 1-9999)."""
    def convert(us: int) -> str:
        seconds, micros = divmod(us, 1_000_000)
        days, sod = divmod(seconds, 86400)
        y, m, d = sem.civil_from_days(days)
        hh, rest = divmod(sod, 3600)
        mm, ss = divmod(rest, 60)
        if us.__class__ is T.UnpaddedMicros:
            fraction = ("." + f"{micros:06d}".rstrip("0")) if micros else ""
        else:
            fraction = "" if width <= 0 else "." + f"{micros:06d}"[:width].ljust(width, "0")
        return f"{sem.iso_year(y)}-{m:02d}-{d:02d}T{hh:02d}:{mm:02d}:{ss:02d}{fraction}Z"
    return convert


EDGES = [0, 1, -1, 999_999, 1_000_000, 1_704_067_201_500_000, 1_704_067_201_000_010, T._DATETIME_MIN_US,
         T._DATETIME_MIN_US - 1, T._DATETIME_MAX_US - 1, T._DATETIME_MAX_US, -62_135_596_800_000_001]


@pytest.mark.parametrize("width", range(7))
def test_fast_path_writes_the_calendar_arithmetics_text(width):
    rng = random.Random(width)
    values = EDGES + [rng.randint(-70_000_000_000_000_000, 260_000_000_000_000_000) for _ in range(3000)]
    ours, reference = T.zoned_timestamp_micros(width), _reference(width)
    for v in values:
        for value in (v, T.UnpaddedMicros(v)):
            assert ours(value) == reference(value), (width, value, type(value).__name__)
    assert ours(T.UnpaddedMicros(1_704_067_201_500_000)) == "2024-01-01T00:00:01.5Z"
