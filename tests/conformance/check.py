"""The suite's verdict on one run: every difference reasoned, every record unchanged through JsonConverter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance import debezium
from conformance.compare import compare
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
    records = [r for rs in run.cdc.values() for r in rs]
    back = debezium.roundtrip(records, workdir)
    changed = [(r["topic"], b) for r, b in zip(records, back) if b != {"key": r["key"], "value": r["value"]}]
    assert not changed, (f"{len(changed)} of cdc's records change through Kafka's JsonConverter "
                         f"(toConnectData, fromConnectData); first: {str(changed[0])[:2000]}")


def require_real_debezium() -> None:
    """Skip, naming what is missing, where the real Debezium cannot run."""
    why = debezium.missing()
    if why:
        pytest.skip(f"the real Debezium cannot run: {why}")
