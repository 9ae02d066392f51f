"""The acceptance scenarios of the MySQL/MariaDB chapter that apply to MariaDB, played from fixture files.

One fixture file per scenario group in ``tests/data/mariadb_scenarios``; the runner is
``tests/mariadb_scenario_runner.py``. Not in the files: features cdc does not have yet (the
look-ahead buffer, read-only incremental snapshots, the Kafka signal channel), MySQL-only ones
(transaction ids without GTIDs: MariaDB always writes GTIDs), and those tested elsewhere (AS-02 and
AS-14 as real processes in ``test_mariadb_e2e.py``, AS-32 to AS-36 in the type tests).
"""

from __future__ import annotations

import pytest

from mariadb_scenario_runner import load_all, run_scenario

SCENARIOS = load_all()


@pytest.mark.parametrize("scenario", [s for _, s in SCENARIOS], ids=[f"{g}:{s['id']}" for g, s in SCENARIOS])
def test_scenario(scenario, mariadb_server, mariadb_db):
    """One scenario: its steps pass in order."""
    run_scenario(scenario, mariadb_server, mariadb_db)
