"""Extract the specification's example connector configurations into tests/data/spec_configs/ (one JSON file each).

Each connector chapter of the seed's Debezium 2.7 documentation has a complete example (a Kafka
Connect JSON document) and property fragments (converters, snapshot overrides, history clients,
transforms); every fragment is written merged onto its chapter's complete example. Callouts
(``// <1>``) and the documents' own printing errors are removed (see ``_clean``).

    uv run python scripts/extract_spec_configs.py
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests/data/spec_configs"
SEED = Path("/work/shared/seeds/000_a4d1630084142ba0.txt")
CHAPTERS = {"mysql": "MySQL", "mariadb": "MariaDB", "postgres": "PostgreSQL"}
_PAIR_JSON = re.compile(r'^\s*"([a-z][A-Za-z0-9_.]+)"\s*:\s*"(.*)"\s*,?\s*$')
_PAIR_PROPS = re.compile(r"^\s*([a-z][A-Za-z0-9_.]+)\s*=\s*(.*?)\s*$")


def _clean(line: str, attributes: dict[str, str]) -> str:
    """A listing line without callouts and with the chapter's attributes resolved."""
    line = re.sub(r"\s*(//\s*)?<\d+>\s*$", "", line)
    for name, value in attributes.items():
        line = line.replace("{" + name + "}", value)
    return line


def _blocks(lines: list[str], start: int, end: int) -> list[tuple[int, list[str]]]:
    out, i = [], start
    while i < end:
        if lines[i] == "----":
            j = i + 1
            while j < end and lines[j] != "----":
                j += 1
            out.append((i + 2, lines[i + 1 : j]))
            i = j + 1
        else:
            i += 1
    return out


def _pairs(body: list[str]) -> dict[str, str]:
    pairs = {}
    for line in body:
        m = _PAIR_JSON.match(line) or _PAIR_PROPS.match(line)
        if m and ("." in m.group(1) or m.group(1) in ("converters", "transforms", "predicates")):
            key, value = m.group(1), m.group(2)
            # "transforms=snapshotasinsert,...": the document's ellipsis stands for other transforms.
            value = re.sub(r",\s*\.\.\.$", "", value)
            pairs[key] = value
    return pairs


def extract() -> dict[str, dict[str, str]]:
    """Configurations by file name."""
    lines = SEED.read_text(encoding="utf-8").split("\n")
    heads = [i for i, line in enumerate(lines) if line.startswith("= ")]
    out: dict[str, dict[str, str]] = {}
    for key, title in CHAPTERS.items():
        start = next(i for i in heads if lines[i] == f"= {{prodname}} connector for {title}")
        end = next(i for i in heads if i > start)
        attributes = {"context": key if key != "postgres" else "postgresql"}
        for line in lines[start : start + 20]:
            m = re.match(r"^:connector-class: (\w+)", line)
            if m:
                attributes["connector-name"] = m.group(1)
        base: dict[str, str] | None = None
        fragments: list[tuple[int, dict[str, str]]] = []
        for lineno, body in _blocks(lines, start, end):
            body = [_clean(line, attributes) for line in body]
            pairs = _pairs(body)
            if not pairs or (len(pairs) < 2 and not any('"snapshot.select' in b for b in body)):
                continue
            if "connector.class" in pairs:
                base = pairs
                out[f"{key}_example_l{lineno}.json"] = pairs
            elif pairs:
                fragments.append((lineno, pairs))
        assert base is not None, f"no complete example in the {title} chapter"
        for lineno, pairs in fragments:
            out[f"{key}_fragment_l{lineno}.json"] = {**base, **pairs}
    return out


def main() -> int:
    """Write the files (and remove stale ones)."""
    OUT.mkdir(parents=True, exist_ok=True)
    configs = extract()
    for old in OUT.glob("*.json"):
        if old.name not in configs:
            old.unlink()
    for name, config in configs.items():
        (OUT / name).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {len(configs)} configurations to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
