"""Types as data: one loader for every connector's type-case file (``tests/data/<connector>_types.yaml``).

A file has ``mode_sets`` (``config``: handling-mode properties; one connector run each) and
``families`` (one table each) of ``columns``: ``column``, ``type`` (SQL), ``values`` (pairs of
input and expected JSON value) or ``inputs``, ``schema`` (the Connect schema fragment), and per
handling mode ``by_mode: {property: {value: {schema, values, omitted}}}``; optionally ``omitted``
(a type Debezium leaves out), ``ddl`` (schema and values where a DDL-parsed definition differs),
``snapshot`` (values where the snapshot writes them otherwise than the log reader),
and per family ``only: {property: [values]}`` and ``xfail: {reason, modes}``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml


def _key(value: Any) -> str:
    """A property value as the file's mode keys spell it (``true``, not ``True``)."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


@dataclass
class ColumnCase:
    """One column under one mode set: its DDL type, inputs, expected schema fragment and values (per path)."""

    name: str
    type: str
    inputs: list[Any]
    schema: dict[str, Any] | None
    expected: list[Any]
    optional: bool = True
    ddl_schema: dict[str, Any] | None = None
    ddl_expected: list[Any] | None = None
    #: The snapshot's values where Debezium's snapshot writes them otherwise than its log reader (``snapshot:``).
    snapshot_expected: list[Any] | None = None

    @property
    def omitted(self) -> bool:
        """True if events leave the column out (a type Debezium cannot map)."""
        return self.schema is None


@dataclass
class FamilyCase:
    """One table under one mode set; ``null`` is the input standing for NULL past a column's list."""

    name: str
    columns: list[ColumnCase]
    null: Any = None
    rows: int = field(init=False)

    def __post_init__(self) -> None:
        self.rows = max(len(c.inputs) for c in self.columns)
        for c in self.columns:
            if not c.optional and len(c.inputs) < self.rows:
                raise ValueError(f"{self.name}.{c.name} is NOT NULL but has fewer values than the table has rows")

    def inputs(self, row: int) -> list[Any]:
        """One row's inputs (``null`` past a column's list)."""
        return [c.inputs[row] if row < len(c.inputs) else self.null for c in self.columns]

    def expected(self, column: ColumnCase, row: int, ddl: bool = False) -> Any:
        """The expected JSON value of ``column`` in ``row`` (None past its list)."""
        values = column.ddl_expected if ddl else column.expected
        return values[row] if row < len(values) else None


class TypeCases:
    """A connector's type-case file: its mode sets and, per mode set, the families that apply."""

    def __init__(self, path: Path, mode_defaults: dict[str, str], optional: Callable[[str], bool], null: Any = None):
        self.data = yaml.safe_load(path.read_text(encoding="utf-8"))
        self.path = path
        self.mode_defaults = mode_defaults
        self.optional = optional
        self.null = null

    def modes(self, mode_set: str) -> dict[str, Any]:
        """The handling modes of ``mode_set``: the defaults, then its ``config``."""
        return {**self.mode_defaults, **self.data["mode_sets"][mode_set].get("config", {})}

    def column(self, spec: dict[str, Any], modes: dict[str, Any]) -> ColumnCase:
        """One column spec resolved for ``modes``."""
        name = spec["column"]
        inputs = spec["inputs"] if "inputs" in spec else [v[0] for v in spec["values"]]
        schema = spec.get("schema")
        expected = [v[1] for v in spec["values"]] if "values" in spec else None
        omitted = spec.get("omitted", False)
        for prop, by_value in spec.get("by_mode", {}).items():
            entries = {_key(k): v for k, v in by_value.items()}
            entry = entries.get(_key(modes.get(prop, "")))
            if entry is None:
                raise ValueError(f"{self.path.name}: column {name} has no by_mode entry for {prop}={modes.get(prop)!r}")
            schema = entry.get("schema", schema)
            expected = entry.get("values", expected)
            omitted = entry.get("omitted", omitted)
        optional = self.optional(spec["type"])
        if omitted:
            return ColumnCase(name, spec["type"], inputs, None, [None] * len(inputs), optional)
        if schema is None or expected is None:
            raise ValueError(f"{self.path.name}: column {name} has no schema or values for modes {modes}")
        if len(expected) != len(inputs):
            raise ValueError(f"{self.path.name}: column {name}: {len(inputs)} inputs but {len(expected)} expected values")
        ddl = spec.get("ddl", {})
        return ColumnCase(name, spec["type"], inputs, schema, expected, optional, ddl.get("schema", schema),
                          ddl.get("values", expected), spec.get("snapshot", {}).get("values"))

    def families(self, mode_set: str) -> dict[str, FamilyCase]:
        """The families that apply under ``mode_set`` (``only``), resolved."""
        modes = self.modes(mode_set)
        out = {}
        for name, spec in self.data["families"].items():
            if any(_key(modes[prop]) not in {_key(a) for a in allowed} for prop, allowed in spec.get("only", {}).items()):
                continue
            out[name] = FamilyCase(name, [self.column(c, modes) for c in spec["columns"]], self.null)
        return out

    def params(self) -> list[Any]:
        """pytest params ``(mode_set, family)`` for every applicable pair, strict xfails marked."""
        params = []
        for mode_set in self.data["mode_sets"]:
            for family in self.families(mode_set):
                marks = []
                xfail = self.data["families"][family].get("xfail")
                if xfail and mode_set in xfail.get("modes", [mode_set]):
                    marks.append(pytest.mark.xfail(strict=True, reason=xfail["reason"]))
                params.append(pytest.param(mode_set, family, id=f"{mode_set}-{family}", marks=marks))
        return params
