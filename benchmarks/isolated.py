"""One measurement in a fresh Python process, with that process's CPU time and peak RSS (as Debezium's JVM is measured)."""

from __future__ import annotations

import multiprocessing
import resource
import time
from concurrent.futures import ProcessPoolExecutor
from types import SimpleNamespace
from typing import Any, Callable


def address(server: Any) -> SimpleNamespace:
    """A server's host, port, user and password: what a child process needs (the server object stays here)."""
    return SimpleNamespace(host=server.host, port=server.port, user=server.user,
                           password=getattr(server, "password", ""))


def _call(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, float, float]:
    result = fn(*args)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return result, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def run(fn: Callable[..., Any], *args: Any) -> tuple[Any, float, float, float]:
    """``fn(*args)`` in a new interpreter (spawned: nothing inherited); (result, CPU s, peak RSS MB, wall s).

    CPU and peak RSS are the whole child's, from its start (interpreter, imports) to the end of ``fn``;
    wall is from launching it to its answer. ``fn`` and ``args`` must be picklable.
    """
    launched = time.perf_counter()
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        result, cpu, rss = pool.submit(_call, fn, args).result()
    return result, cpu, rss, time.perf_counter() - launched
