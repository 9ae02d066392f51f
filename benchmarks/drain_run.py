"""A drain into the file sink, timed until its table's records are written, the CPU of worker processes apart."""

from __future__ import annotations

import resource
import threading
import time
from pathlib import Path
from typing import Any

from cdc_core.config import Config
from cdc_core.engine import Engine
from cdc_core.record_block import RecordBlock
from cdc_core.sinks.file import FileSink


class _CountingSink(FileSink):
    """The file sink, counting the records of ``topic`` written (a worker's block counts as its records)."""

    topic = ""
    written = 0

    def write(self, records: list) -> None:
        super().write(records)
        topic = self.topic
        type(self).written += sum(len(r) if r.__class__ is RecordBlock else 1 for r in records if r.topic == topic)


def run(config: Config, out_dir: Path, topic: str, records: int, **stores: Any) -> tuple[float, float, float]:
    """(records/s, CPU us per record of this process, of its worker processes) of ``Engine(config)`` into the file
    sink at ``out_dir`` from its start until ``records`` of ``topic`` are written; ``stores``: the engine's."""
    _CountingSink.topic, _CountingSink.written = topic, 0
    engine = Engine(config, sink=_CountingSink(Config({"dir": str(out_dir)})), **stores)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    started, cpu = time.perf_counter(), time.process_time()
    runner = threading.Thread(target=engine.run)
    runner.start()
    while _CountingSink.written < records and runner.is_alive():
        time.sleep(0.01)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    engine.stop()
    runner.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the workers, ended and waited for by the stop
    workers = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    return records / elapsed, cpu / records * 1e6, workers / records * 1e6
