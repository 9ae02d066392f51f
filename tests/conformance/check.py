"""The suite's verdict on one run: every difference reasoned, every record unchanged through JsonConverter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance import debezium
from conformance.compare import compare, same_record
from conformance.harness import Capture
from conformance.known import load, summary, unexplained

KNOWN = load(Path(__file__).parent / "known_differences.yaml")


def assert_conforms(run: Capture, connector: str, group: str, workdir: Path, prefix: str = "conformance") -> None:
    """Fail with the differences no entry of known_differences.yaml explains, or with a record
    that Kafka's JsonConverter reads back differently from what cdc wrote."""
    result = compare(run.debezium, run.cdc, prefix)
    report = summary(result, KNOWN, connector, group)
    (workdir / "differences.txt").write_text("\n".join(d.line() for d in result.differences))
    print(f"\nconformance {connector}/{group}: {json.dumps(report)}")
    left = unexplained(result, KNOWN, connector, group)
    assert not left, (f"{len(left)} difference(s) from Debezium {debezium.DEBEZIUM_RELEASE} with no reason in "
                      f"known_differences.yaml ({report}); `python tests/conformance/report.py {workdir}` "
                      f"groups them:\n" + "\n".join(d.line() for d in left[:60]))
    # Kafka's JsonConverter cannot read back everything it writes (NaN and infinities become 0.0,
    # a float32 is written again with Java's longer Float.toString digits): where Debezium's own
    # record is the same and changes the same way, the change is Kafka's, not cdc's.
    topics = sorted(run.cdc)
    records = [r for t in topics for r in run.cdc[t]]
    theirs = [run.debezium.get(t, [])[i] if i < len(run.debezium.get(t, [])) else None
              for t in topics for i in range(len(run.cdc[t]))]
    same = [d for d in theirs if d is not None]
    back = debezium.roundtrip(records + same, workdir)
    back_theirs = iter(back[len(records):])
    changed = []
    for r, b, d in zip(records, back, theirs):
        d_back = next(back_theirs) if d is not None else None
        if b == {"key": r["key"], "value": r["value"]}:
            continue
        if d is not None and d_back is not None and same_record(d, r) and same_record(d_back, b):
            continue
        changed.append((r["topic"], b))
    assert not changed, (f"{len(changed)} of cdc's records change through Kafka's JsonConverter "
                         f"(toConnectData, fromConnectData); first: {str(changed[0])[:2000]}")

def require_real_debezium() -> None:
    """Skip, naming what is missing, where the real Debezium cannot run."""
    why = debezium.missing()
    if why:
        pytest.skip(f"the real Debezium cannot run: {why}")
