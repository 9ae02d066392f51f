"""Where a feed that must stop at a log position ends: the first cut that reached it, without that cut's events."""

from __future__ import annotations

from cdc_spark.feed import ConnectorFeed


def _feed(*cuts: tuple[int, dict]) -> ConnectorFeed:
    feed = ConnectorFeed(None, 0, {"lsn": 0})  # type: ignore[arg-type]  # never started: cuts only
    for position, offset in cuts:
        feed._cut(position, offset)
    return feed


def reached(offset: dict) -> bool:
    return offset.get("lsn", 0) >= 100


def test_a_reached_checkpoint_is_the_stop():
    feed = _feed((1, {"lsn": 10}), (2, {"lsn": 20}), (2, {"lsn": 100}), (3, {"lsn": 110}))
    assert feed.stop_cut is None
    feed.stop_at(reached)
    assert feed.stop_cut == (2, {"lsn": 100})
    assert feed.cut_within(0, None) == (2, {"lsn": 100})
    assert feed.cut_within(0, 1) == (1, {"lsn": 10})


def test_a_reached_change_is_left_out():
    feed = _feed((1, {"lsn": 10}))
    feed.stop_at(reached)
    assert feed.stop_cut is None
    assert feed.cut_within(0, None) == (1, {"lsn": 10})
    feed._cut(2, {"lsn": 20})
    feed._cut(4, {"lsn": 105})  # a delete and its tombstone committed after the position
    feed._cut(5, {"lsn": 120})
    assert feed.stop_cut == (2, {"lsn": 20})
    assert feed.cut_within(0, None) == (2, {"lsn": 20})
    assert feed.cut_within(2, 10) == (2, {"lsn": 20})  # nothing more: the stream is done


def test_a_start_that_reached_the_position_stops_at_once():
    feed = ConnectorFeed(None, 7, {"lsn": 150})  # type: ignore[arg-type]
    feed.stop_at(reached)
    feed._cut(8, {"lsn": 160})
    assert feed.stop_cut == (7, {"lsn": 150})
    assert feed.cut_within(7, None) == (7, {"lsn": 150})
