"""A connector's conformance workload (``<connector>.yaml`` beside this file) and one run of one group."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Callable

import yaml

from conformance.check import assert_conforms, require_real_debezium
from conformance.harness import Side, capture


class Workload:
    """The setup, stream steps and property groups of one connector's workload file."""

    def __init__(self, connector: str, name: str | None = None):
        self.connector = connector
        #: The workload file's name (``<name>.yaml``): the connector's by default.
        self.name = name or connector
        self.spec = yaml.safe_load((Path(__file__).parent / f"{self.name}.yaml").read_text(encoding="utf-8"))
        soak = os.environ.get("CDC_SOAK") == "1"
        #: The groups this run takes: those marked ``ci``, or all of them with ``CDC_SOAK=1``.
        self.groups = [name for name, g in self.spec["groups"].items() if soak or g.get("ci")]

    @property
    def with_types(self) -> bool:
        """True if the connector's type-case tables are part of the workload."""
        return bool(self.spec.get("types"))

    def check(self, side: Side, group: str, workdir: Path, types: Callable[[], None] | None = None) -> None:
        """Run ``group`` through Debezium and cdc (the type tables' stream step last) and judge it."""
        require_real_debezium()
        spec = self.spec["groups"][group]
        # A group may have its own stream steps (the signal scenarios: each its own signal).
        steps: list[Any] = [_named(s, side) for s in (spec["stream"] if "stream" in spec else self.spec["stream"])]
        if types is not None:
            steps.append(types)
        properties = {k: _named(v, side) for k, v in spec.get("properties", {}).items()}
        run = capture(side, _named(self.spec["setup"], side), steps, properties, workdir)
        converter = {k[len("converter."):]: v for k, v in properties.items() if k.startswith("converter.")}
        assert_conforms(run, self.connector, group, workdir, converter=converter)


def _named(value: Any, side: Side) -> Any:
    """``{{table}}`` in a string as the side's fully qualified table name (``public.t``, ``<database>.t``)."""
    if isinstance(value, str):
        return re.sub(r"\{\{(\w+)\}\}", lambda m: side.qualified(m.group(1)), value)
    return value
