"""Generate the property catalogue (cdc_core/config/catalogue/*.yaml) from the specification's property tables.

Reads the connector chapters of the Debezium 2.7 documentation in the seeds (MySQL, MariaDB,
PostgreSQL, SQL Server, Db2) and Debezium Server's documentation (not in the seeds: taken from Debezium 2.7.4's
``documentation/modules/ROOT/pages/operations/debezium-server.adoc`` in a clone of
debezium/debezium at ``DEBEZIUM_REPO``; without one, server.yaml is left as it is), records every documented
property with its default, asks the code whether cdc implements it (the connector's ``fields``),
and merges in ``decisions.yaml``: the hand-made decision for each documented property cdc does
not implement (accepted without effect, or refused because ignoring it changes the data).

    uv run python scripts/generate_catalogue.py            # rewrite the catalogue
    uv run python scripts/generate_catalogue.py --check    # exit 1 if the committed files are stale
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "packages/cdc-core/src/cdc_core/config/catalogue"
SEEDS = Path("/work/shared/seeds")
SEED = "000_a4d1630084142ba0.txt"
DEBEZIUM_REPO = Path("/work/.mirror/debezium+debezium/repo")
SERVER_DOC = "v2.7.4.Final:documentation/modules/ROOT/pages/operations/debezium-server.adoc"

#: connector -> (chapter title in the seed, short connector.class name)
CHAPTERS = {"mysql": "MySQL", "mariadb": "MariaDB", "postgres": "PostgreSQL", "sqlserver": "SQL Server", "db2": "Db2"}

#: Printing errors of the seed's property anchors (the displayed name is wrong; the anchor is right).
ERRATA = {"table-exclude-list": "table.exclude.list"}

_DEFLIST = re.compile(r"^xref:\{context\}-property-[A-Za-z0-9_.-]+\[`\+?([^`]+?)\+?`\]::\s*$")
_ROW = re.compile(r"^\|\[\[[^\]]+\]\]<<[^,]+,\s*`\+?([^`]+?)\+?`>>\s*\+?\s*$")
_ROW_PLAIN = re.compile(r"^\|`([a-z][A-Za-z0-9_.<>*-]+)`\s*$")
_PASS_THROUGH = re.compile(r"`([a-z][a-z._]*?)\.\\?\*`")
_PROPERTY = re.compile(r"^[a-z][A-Za-z0-9_.<>*-]*$")


def _clean_default(text: str) -> str | None:
    """The documented default as plain text, or None where the documents say there is none."""
    text = text.strip().rstrip("+").strip()
    text = re.sub(r"^\*?Default value:\*?", "", text).strip()
    text = text.replace("`", "").replace("pass:[_]", "_").strip()
    text = re.sub(r"^_(.*)_$", r"\1", text).strip()
    if not text or text.lower() in ("no default", "no default value", "n/a", "empty string", "none"):
        return None if text.lower() != "none" else "none"
    return text


def _template(name: str) -> str | None:
    """A regex for a templated name (``column.mask.with._length_.chars``, ``driver.*``), or None for a plain name."""
    parts = re.split(r"(_[A-Za-z]+_|<[^>]+>|\*)", name)
    if len(parts) == 1:
        return None
    out = []
    for p in parts:
        if re.fullmatch(r"_[A-Za-z]+_|<[^>]+>", p):
            out.append(r".+" if p == "_salt_" else r"[^.]+")  # a salt may hold dots
        elif p == "*":
            out.append(r".+")
        else:
            out.append(re.escape(p))
    return "".join(out)


def _display(name: str) -> str:
    """A templated name as users read it: ``column.mask.with.<length>.chars``."""
    return re.sub(r"_([A-Za-z]+)_", r"<\1>", name)


def _properties(lines: list[str], start: int, end: int) -> list[dict[str, Any]]:
    """Every property defined between two line numbers: definition lists and table rows, in order."""
    found: dict[str, dict[str, Any]] = {}
    for i in range(start, end):
        line = lines[i]
        m = _DEFLIST.match(line) or _ROW.match(line)
        if not m and i and lines[i - 1].startswith("[id="):
            m = _ROW_PLAIN.match(line)  # Debezium Server's tables: an [id=...] line, then |`name`
        if not m:
            continue
        name = m.group(1).strip()
        name = ERRATA.get(name, name)
        if not _PROPERTY.match(name) or "." not in name or any(s[:1].isupper() for s in name.split(".")):
            continue  # a metric (CamelCase), a value or a Java type
        default = None
        for j in range(i + 1, min(i + 6, end)):
            nxt = lines[j].strip()
            if not nxt or nxt == "+":
                continue
            if nxt.startswith("Default value:") or nxt.startswith("*Default value:*"):
                default = _clean_default(nxt)
                break
            if m.re is _DEFLIST:
                break  # a definition list without a "Default value:" line
            if nxt.startswith("|"):
                default = _clean_default(nxt[1:])
                break
        if name in found:
            continue
        entry: dict[str, Any] = {"name": _display(name), "default": default, "line": i + 1}
        regex = _template(name)
        if regex:
            entry["pattern"] = regex
        found[name] = entry
    for i in range(start, end):
        line = lines[i]
        if "pass-through" not in line.lower() and "prefix" not in line.lower():
            continue
        for prefix in _PASS_THROUGH.findall(line):
            name = f"{prefix}.*"
            if name in found or prefix in ("signal", "schema.history.internal", "selector"):
                continue
            found[name] = {"name": name, "default": None, "line": i + 1, "pattern": re.escape(prefix) + r"\..+"}
    return list(found.values())


def _chapters(lines: list[str]) -> dict[str, tuple[int, int]]:
    heads = [i for i, line in enumerate(lines) if line.startswith("= ")]
    out = {}
    for key, title in CHAPTERS.items():
        start = next(i for i in heads if lines[i] == f"= {{prodname}} connector for {title}")
        out[key] = (start, next(i for i in heads if i > start))
    return out


def _server_doc() -> list[str] | None:
    """Debezium Server's documentation page (Debezium 2.7.4) from a clone of debezium/debezium, or None without one."""
    try:
        text = subprocess.run(["git", "-C", str(DEBEZIUM_REPO), "show", SERVER_DOC], check=True,
                              capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return text.split("\n")


def _server_properties(lines: list[str]) -> list[dict[str, Any]]:
    """The properties of Debezium Server's page; the async-engine ones are connector properties (``debezium.source.``)."""
    props = _properties(lines, 0, len(lines))
    for p in props:
        if not p["name"].startswith(("debezium.", "quarkus.")):
            p["name"] = f"debezium.source.{p['name']}"
            if "pattern" in p:
                p["pattern"] = re.escape("debezium.source.") + p["pattern"]
    return props


def _implemented(connector: str) -> Any:
    """The Fields cdc validates for a connector: the shared ones, signals and the connector's own."""
    from cdc_core.config import common
    from cdc_core.plugins import registry
    from cdc_core.signals.config import SIGNAL_FIELDS

    cls = registry().get("connector", connector)
    return common.COMMON_FIELDS + SIGNAL_FIELDS + cls.fields


#: Documented, unimplemented properties without a decision (the script fails listing them).
MISSING: list[str] = []


def _status(entry: dict[str, Any], knows: Any, decisions: dict[str, Any], connector: str) -> None:
    """Set ``status`` (implemented, owned, accepted, refused) and ``reason`` of one entry, decisions first."""
    name = entry["name"]
    decision = decisions["properties"].get(f"{connector}:{name}") or decisions["properties"].get(name)
    if decision is None:
        for owner in decisions["owned"]:
            if re.fullmatch(owner["pattern"], name.replace("<", "x").replace(">", "x")):
                decision = {"status": "owned", "reason": owner["reason"]}
                break
    if decision is None and knows(name):
        decision = {"status": "implemented"}
    if decision is None:
        MISSING.append(f"{connector}:{name}")
        decision = {"status": "undecided"}
    entry["status"] = decision["status"]
    if decision.get("reason"):
        entry["reason"] = decision["reason"]


def generate() -> dict[str, str]:
    """The catalogue files' texts by file name (server.yaml only where Debezium's repository is cloned)."""
    decisions = yaml.safe_load((OUT / "decisions.yaml").read_text(encoding="utf-8"))
    lines = (SEEDS / SEED).read_text(encoding="utf-8").split("\n")
    out: dict[str, str] = {}
    for connector, (start, end) in _chapters(lines).items():
        fields = _implemented(connector)
        props = _properties(lines, start, end)
        for entry in props:
            _status(entry, lambda n, f=fields: f.knows(n) or (n.endswith(".*") and f.knows(n[:-1] + "x")),
                    decisions, connector)
        out[f"{connector}.yaml"] = _dump(connector, f"seeds/{SEED}, chapter \"{CHAPTERS[connector]}\"", props)
    doc = _server_doc()
    if doc is None:
        # No clone of Debezium's repository here: the committed server catalogue stands as it is.
        print(f"note: {DEBEZIUM_REPO} not found; server.yaml left as committed", file=sys.stderr)
        if MISSING:
            raise SystemExit("documented, not implemented, and no decision in decisions.yaml:\n  " + "\n  ".join(MISSING))
        return out
    server = _server_properties(doc)
    for entry in server:
        _status(entry, lambda n: False, decisions, "server")
    if MISSING:
        raise SystemExit("documented, not implemented, and no decision in decisions.yaml:\n  " + "\n  ".join(MISSING))
    server += decisions.get("extra", {}).get("server", [])
    out["server.yaml"] = _dump("server", "Debezium 2.7.4 " + SERVER_DOC.split(":", 1)[1] + " (not in the seeds)", server)
    return out


def _dump(connector: str, source: str, props: list[dict[str, Any]]) -> str:
    head = (f"# Generated by scripts/generate_catalogue.py from {source};\n"
            "# do not edit: change decisions.yaml (or the code) and run the script again.\n")
    body = {"connector": connector, "source": source, "properties": props}
    return head + yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=120)


def main(argv: list[str] | None = None) -> int:
    """Write the catalogue, or with --check report the files that differ from a fresh generation."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that the committed files are current")
    args = parser.parse_args(argv)
    files = generate()
    stale = [name for name, text in files.items()
             if not (OUT / name).exists() or (OUT / name).read_text(encoding="utf-8") != text]
    if args.check:
        for name in stale:
            print(f"stale: {OUT / name}", file=sys.stderr)
        return 1 if stale else 0
    for name in stale:
        (OUT / name).write_text(files[name], encoding="utf-8")
        print(f"wrote {OUT / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
