"""The acceptance scenarios of each connector's spec chapter, played from its fixture files by one runner.

PostgreSQL's files are ``tests/scenarios/postgres_*.yaml`` (the scenarios that apply to pgoutput);
MariaDB's, ``tests/data/mariadb_scenarios/*.yaml`` (not in them: features cdc does not have yet --
the look-ahead buffer, read-only incremental snapshots, the Kafka signal channel --, MySQL-only ones,
and those tested elsewhere: AS-02 and AS-14 as real processes in ``test_mariadb_e2e.py``, AS-32 to
AS-36 in the type tests). The runner is ``kit.scenarios``; each connector's differences are its
``ScenarioRun`` subclass (``ConnectorFixture.scenario_run``).
"""

from __future__ import annotations

import importlib

import pytest

from kit import FIXTURES
from kit.scenarios import load, run_scenario


def _fixture_class(name: str) -> type:
    module, cls = FIXTURES[name][:2]
    return getattr(importlib.import_module(module), cls)


#: (connector, file stem, scenario) for every connector in ``kit.FIXTURES``.
CASES = [(name, group, s) for name in sorted(FIXTURES) for group, s in load(_fixture_class(name))]


@pytest.mark.parametrize(("connector", "scenario"), [(name, s) for name, _, s in CASES], indirect=["connector"],
                         ids=[f"{name}-{group}:{s['id']}" for name, group, s in CASES])
def test_scenario(connector, scenario, tmp_path):
    """One scenario: its steps pass in order."""
    module, cls = connector.scenario_run.split(":")
    run_scenario(getattr(importlib.import_module(module), cls)(connector, scenario, tmp_path))
