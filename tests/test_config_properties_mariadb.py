"""A Debezium Server configuration with documented properties through ``cdc run`` on a real MariaDB.

``topic.naming.strategy`` decides the data-change and schema-change topics (MariaDB's tables have a
database and no schema, so Debezium's two strategies differ here), and documented properties cdc
does not implement start the service with one warning.
"""

from __future__ import annotations

import uuid

from cdc_process import CdcProcess, write_properties
from mariadb_cdc import mariadb_properties


def _database(mariadb_server) -> str:
    db = f"names_{uuid.uuid4().hex[:8]}"
    mariadb_server.create_database(db)
    with mariadb_server.connect(db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20))")
        cur.execute("INSERT INTO items VALUES (1, 'one')")
    return db


def test_strategies_name_data_and_schema_change_topics_and_unimplemented_properties_warn_once(
        mariadb_server, tmp_path) -> None:
    dbs = [_database(mariadb_server), _database(mariadb_server)]
    cases = [
        # Debezium's default for MariaDB: <prefix>_<database>_<table> with the delimiter "_".
        ("io.debezium.schema.DefaultTopicNamingStrategy", f"dbserver1_{dbs[0]}_items"),
        # The schema strategy: MariaDB's tables have no schema part, so <prefix>_<table>.
        ("io.debezium.schema.SchemaTopicNamingStrategy", "dbserver1_items"),
    ]
    try:
        for n, (strategy, topic) in enumerate(cases):
            db = dbs[n]
            work = tmp_path / str(n)
            work.mkdir()
            props = mariadb_properties(mariadb_server, db, work, **{
                "topic.naming.strategy": strategy, "topic.delimiter": "_", "database.server.id": 5700 + n,
                "tasks.max": 1, "database.jdbc.driver": "org.mariadb.jdbc.Driver"})
            props["quarkus.log.console.json"] = "false"
            cdc = CdcProcess(write_properties(work / "app.properties", props), work).start()
            try:
                snapshot = cdc.wait_events(topic, 1)
                with mariadb_server.connect(db) as conn, conn.cursor() as cur:
                    cur.execute(f"INSERT INTO items VALUES ({10 + n}, 'new')")
                    cur.execute("ALTER TABLE items ADD COLUMN note VARCHAR(10)")
                events = cdc.wait_events(topic, 2)
                cdc.wait_until(lambda: any("ALTER TABLE items" in e["value"]["payload"]["ddl"]
                                           and e["value"]["payload"]["databaseName"] == db
                                           for e in cdc.events("dbserver1")), what="the ALTER on dbserver1")
            finally:
                assert cdc.terminate() == 0, cdc.log()
            assert snapshot[0]["value"]["payload"]["after"] == {"id": 1, "name": "one"}
            assert events[1]["value"]["payload"]["after"] == {"id": 10 + n, "name": "new"}
            assert events[1]["value"]["schema"]["name"] == f"{topic}.Envelope"
            warnings = [line for line in cdc.log().splitlines() if "accepted, no effect in cdc" in line]
            assert len(warnings) == 1, cdc.log()
            # tasks.max=1 is what the MySQL family runs (more is refused, as Debezium's taskConfigs): not listed.
            assert warnings[0].endswith("accepted, no effect in cdc: quarkus.log.console.json, "
                                        "debezium.source.database.jdbc.driver"), warnings
    finally:
        for db in dbs:
            mariadb_server.execute(f"DROP DATABASE IF EXISTS `{db}`")
