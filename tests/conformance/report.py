"""Differences of one conformance run, grouped by class: ``python tests/conformance/report.py WORKDIR``.

WORKDIR is a test's ``tmp_path`` (run pytest with ``--basetemp=DIR`` to keep it): it holds
``debezium/debezium.jsonl`` and ``cdc/*.jsonl``. Column names and record indexes are folded, so
each line is one kind of difference with its count and one example; ``--by-topic`` keeps tables apart.
"""

from __future__ import annotations

import collections
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conformance.compare import compare  # noqa: E402
from conformance.harness import PING_TABLE, _cdc_records, _without_pings  # noqa: E402


def main(argv: list[str]) -> int:
    """Print the grouped differences of the run in ``argv[0]``."""
    if not argv:
        print(__doc__)
        return 2
    workdir, by_topic = Path(argv[0]), "--by-topic" in argv
    debezium_records = [json.loads(line) for line in (workdir / "debezium" / "debezium.jsonl").read_text().splitlines()]
    cdc_records = _cdc_records(workdir / "cdc")
    prefix = (debezium_records or cdc_records or [{"topic": "x."}])[0]["topic"].split(".")[0]
    ping = next((r["topic"] for r in debezium_records if r["topic"].endswith(f".{PING_TABLE}")), "")
    control = {ping[len(prefix) + 1:]}
    debezium, cdc = _without_pings(debezium_records, control, ping), _without_pings(cdc_records, control, ping)
    result = compare(debezium, cdc, prefix)
    print(f"{result.fields} fields, {result.identical} identical ({result.ratio:.2%}), {len(result.differences)} differences")
    counts: collections.Counter[str] = collections.Counter()
    examples = {}
    for d in result.differences:
        path = re.sub(r"\[\d+\]", "", d.path)
        path = re.sub(r"\.fields\.(before|after)\.fields\.[^.]+", ".fields.<column>", path)
        path = re.sub(r"payload\.(before|after)\.[^.]+", "payload.<column>", path)
        key = f"{d.topic} {d.op} {path}" if by_topic else f"{d.op} {path}"
        counts[key] += 1
        examples.setdefault(key, d)
    for key, n in counts.most_common():
        print(f"{n:6d} {key} | {examples[key].line().split(': debezium=', 1)[1][:240]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
