"""``cdc run`` with the Db2 connector on the stand-in: kill -9 and restart resume at the exact change."""

from __future__ import annotations

from change_table_cli import kill_and_restart

from cdc_db2.standin.testing import inventory, standin  # noqa: F401  (fixtures)

INSERT = 'INSERT INTO "MYSCHEMA"."CUSTOMERS" ("FIRST_NAME", "LAST_NAME", "EMAIL") VALUES '


def test_kill_9_and_restart_resume_at_the_exact_change(inventory, tmp_path):
    def update() -> int:
        inventory.execute('UPDATE "MYSCHEMA"."CUSTOMERS" SET "EMAIL" = \'changed@x\' WHERE "ID" = 1002')
        return 1

    run = kill_and_restart(inventory, tmp_path, "cdc_db2.standin.cli", "mydatabase.MYSCHEMA.CUSTOMERS",
                           lambda rows: inventory.execute(INSERT + rows), lambda p: p.get("server") == "mydatabase",
                           ("commit_lsn", "change_lsn"), update)
    assert len({v["after"]["ID"] for v in run.streamed if v["op"] == "c"}) == run.inserted - 4
