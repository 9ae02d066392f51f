"""Write README.md's "## Configuration properties" section from the property catalogue (cdc_core/config/catalogue).

    uv run python scripts/generate_readme_properties.py           # rewrite the section
    uv run python scripts/generate_readme_properties.py --check   # exit 1 if README.md is stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
HEADING = "## Configuration properties"
NEXT = "## Benchmarks"
CONNECTORS = (("mysql", "MySQL"), ("mariadb", "MariaDB"), ("postgres", "PostgreSQL"), ("sqlserver", "SQL Server"), ("db2", "Db2"))
MARKS = {"implemented": "yes", "owned": "yes", "accepted": "no effect", "refused": "refused"}


def _cell(text: str | None) -> str:
    return "" if text is None else f"`{text}`".replace("|", "\\|")


def render() -> str:
    """The section's text, heading included, ending with a blank line."""
    from cdc_core.config.catalogue import Catalogue

    catalogues = {key: Catalogue.load(key) for key, _ in CONNECTORS}
    names: list[str] = []
    for cat in catalogues.values():
        assert cat is not None
        names += [e.name for e in cat.entries if e.name not in names]
    lines = [
        HEADING,
        "",
        "Generated from the property catalogue (`packages/cdc-core/src/cdc_core/config/catalogue/`, itself generated",
        "from the specification by `scripts/generate_catalogue.py`) by `scripts/generate_readme_properties.py`;",
        "a test fails when this section is stale. A configuration may use every property below: *yes* is",
        "implemented, *no effect* starts with one warning (`accepted, no effect in cdc: ...`), *refused* stops",
        "the start naming why (unless set to its documented default), and an empty cell is a property that",
        "connector's documentation does not list. A name nobody documents is an error with a suggestion.",
        "`cdc validate CONFIG` prints all three groups. The default is the documented one (MySQL's, then",
        "PostgreSQL's where they differ).",
        "",
        "| Property | Default | MySQL | MariaDB | PostgreSQL |",
        "|---|---|---|---|---|",
    ]
    for name in sorted(names):
        entries = [catalogues[key].find(name) if catalogues[key] else None for key, _ in CONNECTORS]
        entries = [e if e is not None and e.name == name else None for e in entries]
        defaults = []
        for e in entries:
            if e is not None and e.default is not None and e.default not in defaults:
                defaults.append(e.default)
        marks = [MARKS[e.status] if e is not None else "" for e in entries]
        lines.append(f"| `{name}` | {' / '.join(_cell(d) for d in defaults)} | {' | '.join(marks)} |")
    lines += [
        "",
        "Notes: `topic.naming.strategy` takes Debezium's `DefaultTopicNamingStrategy` (`<prefix>.<database>.<table>`;",
        "PostgreSQL's tables have no database part) and `SchemaTopicNamingStrategy` (`<prefix>.<schema>.<table>`), or a",
        "plugin's strategy registered through the `register_topic_naming_strategies` hook (a",
        "`cdc_core.topics.TopicNamingStrategy` subclass); unset, each connector keeps its documented default.",
        "`max.queue.size.in.bytes` counts a record as its topic, key and value in JSON.",
        "`custom.metric.tags` (`k1=v1,k2=v2`) is appended to every MBean name and is a label of every Prometheus",
        "sample. `retriable.restart.connector.wait.ms`, when set, is the constant wait before each restart after a",
        "retriable error, as in Debezium; unset, cdc keeps its back-off (`errors.retry.delay.initial.ms`, 300 ms",
        "doubling up to `errors.retry.delay.max.ms`, 10 s) rather than Debezium's 10 s.",
        "",
        "Why the properties marked *no effect* or *refused* are so:",
        "",
    ]
    seen: set[tuple[str, str]] = set()
    for key, title in CONNECTORS:
        cat = catalogues[key]
        assert cat is not None
        for e in cat.entries:
            if e.status in ("accepted", "refused") and (e.name, e.reason) not in seen:
                seen.add((e.name, e.reason))
                who = [t for k, t in CONNECTORS if (c := catalogues[k]) is not None and (f := c.find(e.name)) is not None
                       and f.status == e.status and f.name == e.name and f.reason == e.reason]
                lines.append(f"- `{e.name}` ({', '.join(who)}; {MARKS[e.status]}): {e.reason}.")
    server = Catalogue.load("server")
    assert server is not None
    lines += [
        "",
        "Debezium Server's own properties (its documentation for 2.7.4, outside the seeds): `debezium.source.*` are",
        "the connector's properties above; `debezium.sink.<type>.*` are checked by the configured sink, and another",
        "sink's documented properties are accepted without effect; `debezium.format.*`, `debezium.transforms.*` and",
        "`debezium.predicates.*` belong to the formats and transforms. Without effect in cdc:",
        "",
    ]
    for e in server.entries:
        if e.status in ("accepted", "refused"):
            lines.append(f"- `{e.name}` ({MARKS[e.status]}): {e.reason}.")
    return "\n".join(lines) + "\n\n"


def updated(text: str) -> str:
    """README text with the section replaced (or inserted before ``## Benchmarks``)."""
    section = render()
    if HEADING + "\n" in text:
        start = text.index(HEADING + "\n")
        end = text.index("\n## ", start + len(HEADING)) + 1
        return text[:start] + section + text[end:]
    at = text.index(NEXT + "\n")
    return text[:at] + section + text[at:]


def main(argv: list[str] | None = None) -> int:
    """Rewrite README.md's section, or with --check say whether it is current."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    text = README.read_text(encoding="utf-8")
    new = updated(text)
    if args.check:
        if new != text:
            print(f"stale: {README} ({HEADING}); run scripts/generate_readme_properties.py", file=sys.stderr)
            return 1
        return 0
    if new != text:
        README.write_text(new, encoding="utf-8")
        print(f"wrote {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
