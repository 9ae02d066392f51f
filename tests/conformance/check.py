"""The suite's verdict on one run: every difference reasoned, every record unchanged through JsonConverter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance import debezium
from conformance.compare import Comparison, _walk, compare
from conformance.harness import Capture
from conformance.known import load, summary, unexplained

KNOWN = load(Path(__file__).parent / "known_differences.yaml")


def assert_conforms(run: Capture, connector: str, group: str, workdir: Path, prefix: str = "conformance",
                    converter: dict[str, Any] | None = None) -> None:
    """Fail with the differences no entry of known_differences.yaml explains, or with a record
    that Kafka's JsonConverter (with the group's ``converter`` options) reads back differently
    from what cdc wrote."""
    result = compare(run.debezium, run.cdc, prefix)
    report = summary(result, KNOWN, connector, group)
    (workdir / "differences.txt").write_text("\n".join(d.line() for d in result.differences))
    print(f"\nconformance {connector}/{group}: {json.dumps(report)}")
    left = unexplained(result, KNOWN, connector, group)
    assert not left, (f"{len(left)} difference(s) from Debezium {debezium.DEBEZIUM_RELEASE} with no reason in "
                      f"known_differences.yaml ({report}); `python tests/conformance/report.py {workdir}` "
                      f"groups them:\n" + "\n".join(d.line() for d in left[:60]))
    explained = {(d.topic, d.index, d.path) for d in result.differences} - {(d.topic, d.index, d.path) for d in left}
    changed = roundtrip_changes(run, explained, workdir, converter)
    assert not changed, (f"{len(changed)} change(s) to cdc's records through Kafka's JsonConverter "
                         f"(toConnectData, then fromConnectData):\n" + "\n".join(changed[:30]))


def roundtrip_changes(run: Capture, explained: set[tuple[str, int, str]], workdir: Path,
                      converter: dict[str, Any] | None = None) -> list[str]:
    """What Kafka's JsonConverter changes in cdc's records when it reads and writes them again.

    JsonConverter cannot read back all it writes (NaN and infinities come back as 0.0; a float32
    is written again with Java's Float.toString digits): a change is cdc's only where the round
    trip of Debezium's record at the same place comes out otherwise, and the two records do not
    differ there for a reason on the known list.
    """
    topics = sorted(run.cdc)
    places = [(t, i) for t in topics for i in range(len(run.cdc[t]))]
    records = [run.cdc[t][i] for t, i in places]
    theirs = [(t, i) for t, i in places if i < len(run.debezium.get(t, []))]
    back = debezium.roundtrip(records + [run.debezium[t][i] for t, i in theirs], workdir, converter)
    back_theirs = dict(zip(theirs, back[len(records):]))
    out = []
    for (topic, index), record, again in zip(places, records, back):
        mine = _changes(record, again)
        if not mine:
            continue
        if (topic, index) in back_theirs:
            mine -= {p for p in mine if (topic, index, p) in explained}
            mine &= _changes(back_theirs[(topic, index)], again)
        out += [f"{topic}[{index}] {p}" for p in sorted(mine)]
    return out


def _changes(a: dict, b: dict) -> set[str]:
    """The paths where two records' keys or values differ (what compare.IGNORED leaves out aside)."""
    out = Comparison()
    for part in ("key", "value"):
        _walk("data", "*", part, a.get(part), b.get(part), out, "", 0)
    return {d.path for d in out.differences}


def require_real_debezium() -> None:
    """Skip, naming what is missing, where the real Debezium cannot run."""
    why = debezium.missing()
    if why:
        pytest.skip(f"the real Debezium cannot run: {why}")
