"""The PostgreSQL connector's side of the data-driven scenarios: its configuration and its own step (``hold_slot``)."""

from __future__ import annotations

import time
from typing import Any, ClassVar

from kit.scenarios import FileOffsetsRun, ScenarioRun


def _hold_slot(run: ScenarioRun, slot: str, timeout: float = 30.0) -> None:
    """A replication client keeps ``slot`` active, as another connector would, until the scenario ends.

    The server lets a slot go a moment after its client disconnects (its walsender ends on its own
    time): a just-stopped connector's slot is waited for until it is free, then taken.
    """
    from cdc_postgres.replication import ReplicationConnection, ReplicationError

    deadline = time.monotonic() + timeout
    while True:
        holder = ReplicationConnection(run.server.conninfo(run.db))
        try:
            holder.start(slot, 0, {"proto_version": "1", "publication_names": '"dbz_publication"'})
        except ReplicationError as e:
            holder.close()
            if "is active for PID" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
            continue
        run.cleanups.append(holder.close)
        active = run.server.execute("SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s",
                                    dbname=run.db, params=(slot,))
        assert active and active[0][0] is not None, f"slot {slot} is not active while held: {active}"
        return


class PostgresScenarioRun(FileOffsetsRun):
    """pgoutput on the test database, offsets in a file; every topic watched."""

    steps: ClassVar[dict[str, Any]] = {"hold_slot": _hold_slot}

    def base_config(self, prefix: str) -> dict[str, Any]:
        """The PostgreSQL connector on the test database."""
        return {"connector.class": "postgres", "database.hostname": self.server.host, "database.port": self.server.port,
                "database.user": self.server.user, "database.dbname": self.db, "topic.prefix": prefix,
                "poll.interval.ms": 50}
