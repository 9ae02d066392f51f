"""The acceptance scenarios of the PostgreSQL chapter that apply to pgoutput, played from fixture files."""

from __future__ import annotations

from pathlib import Path

import pytest

from scenario_runner import load, run_scenario

SCENARIOS = [(path.stem, s) for path in sorted((Path(__file__).parent / "scenarios").glob("postgres_*.yaml")) for s in load(path)]


@pytest.mark.parametrize("scenario", [s for _, s in SCENARIOS], ids=[f"{g}:{s['id']}" for g, s in SCENARIOS])
def test_scenario(scenario, pg_server, pg_db, tmp_path):
    run_scenario(scenario, pg_server, pg_db, tmp_path)
