"""A connector's conformance workload (``<connector>.yaml`` beside this file) and one run of one group."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import yaml

from conformance.check import assert_conforms, require_real_debezium
from conformance.harness import Side, capture


class Workload:
    """The setup, stream steps and property groups of one connector's workload file."""

    def __init__(self, connector: str):
        self.connector = connector
        self.spec = yaml.safe_load((Path(__file__).parent / f"{connector}.yaml").read_text(encoding="utf-8"))
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
        steps: list[Any] = list(self.spec["stream"])
        if types is not None:
            steps.append(types)
        properties = dict(self.spec["groups"][group].get("properties", {}))
        run = capture(side, self.spec["setup"], steps, properties, workdir)
        converter = {k[len("converter."):]: v for k, v in properties.items() if k.startswith("converter.")}
        assert_conforms(run, self.connector, group, workdir, converter=converter)
