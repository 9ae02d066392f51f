"""Process settings for the Python processes Spark runs the source in (driver-side runner, executors)."""

from __future__ import annotations

import gc

from cdc_core.engine import YOUNG_GC_THRESHOLD


def tune_gc() -> None:
    """Collect young objects less often, as the engine does: events are acyclic and freed by reference
    counting, and the default threshold spends a large share of a pipeline's time scanning them."""
    young, middle, old = gc.get_threshold()
    if young < YOUNG_GC_THRESHOLD:
        gc.set_threshold(YOUNG_GC_THRESHOLD, middle, old)
