"""The acceptance scenarios of the MySQL/MariaDB chapter that apply to MariaDB, played from fixture files.

One fixture file per scenario group in ``tests/data/mariadb_scenarios``; the runner is
``tests/mariadb_scenario_runner.py``. Scenarios of features cdc does not have yet (incremental and
blocking snapshots, signals, the look-ahead buffer) and MySQL-only ones (transaction ids without
GTIDs: MariaDB always writes GTIDs) are not in the files.
"""

from __future__ import annotations

import pytest

from mariadb_scenario_runner import load_all, run_scenario

SCENARIOS = load_all()


@pytest.mark.parametrize("scenario", [s for _, s in SCENARIOS], ids=[f"{g}:{s['id']}" for g, s in SCENARIOS])
def test_scenario(scenario, mariadb_server, mariadb_db):
    """One scenario: its steps pass in order."""
    run_scenario(scenario, mariadb_server, mariadb_db)
