"""``cdc run`` with the SQL Server connector on the stand-in: kill -9 and restart resume at the exact change."""

from __future__ import annotations

from change_table_cli import kill_and_restart

from cdc_sqlserver.standin.testing import inventory, standin  # noqa: F401  (fixtures)


def test_kill_9_and_restart_resume_at_the_exact_change(inventory, tmp_path):
    def update_and_key_change() -> int:
        inventory.execute("UPDATE dbo.customers SET email = 'changed@x' WHERE id = 1002")
        inventory.execute("UPDATE dbo.customers SET id = 9001 WHERE id = 1003")
        return 1 + 2  # the update, and the key change's delete and create

    run = kill_and_restart(inventory, tmp_path, "cdc_sqlserver.standin.cli",
                           f"server1.{inventory.dbname}.dbo.customers",
                           lambda rows: inventory.execute(
                               f"INSERT INTO dbo.customers (first_name, last_name, email) VALUES {rows}"),
                           lambda p: p.get("database") == inventory.dbname,
                           ("commit_lsn", "change_lsn", "event_serial_no"), update_and_key_change)
    # The restarted connector's first event is the very next change after the stored offset, value for value
    # but the envelope's processing time (the killed process may have delivered it too, uncommitted, earlier).
    first = next(v for v in run.streamed if (v["source"]["commit_lsn"], v["source"]["change_lsn"],
                                             v["source"]["event_serial_no"]) == run.ordered[len(run.before)])
    assert _without_processing_time(run.after_restart[0]) == _without_processing_time(first)
    ids = {v["after"]["id"] for v in run.streamed if v["op"] == "c"}
    assert len(ids) == run.inserted - 4 + 1


def _without_processing_time(value: dict) -> dict:
    """An event value without the envelope's ts_ms/ts_us/ts_ns (when it was built, not what changed)."""
    return {k: v for k, v in value.items() if k not in ("ts_ms", "ts_us", "ts_ns")}
