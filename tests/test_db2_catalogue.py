"""Db2's documented properties: the chapter's example configuration starts, every documented name is known, a typo is an error with a suggestion."""

from __future__ import annotations

import pytest

from cdc_core.config import Config
from cdc_core.config.catalogue import Catalogue
from cdc_core.engine import connector_report

#: The chapter's example (seeds 000, Db2 chapter, "Db2 connector configuration example"), comments removed.
EXAMPLE = {"connector.class": "io.debezium.connector.db2.Db2Connector", "database.hostname": "192.168.99.100",
           "database.port": "50000", "database.user": "db2inst1", "database.password": "Password!",
           "database.dbname": "mydatabase", "topic.prefix": "fullfillment", "table.include.list": "MYSCHEMA.CUSTOMERS",
           "schema.history.internal.kafka.bootstrap.servers": "kafka:9092",
           "schema.history.internal.kafka.topic": "schemahistory.fullfillment"}


def test_the_chapters_example_validates() -> None:
    report = connector_report(Config(EXAMPLE))
    assert report.problems == [] and report.ignored == []


def test_every_documented_db2_property_is_decided() -> None:
    db2 = Catalogue.load("db2")
    assert len(db2.entries) >= 80
    assert {e.status for e in db2.entries} <= {"implemented", "owned", "accepted"}
    for name in ("db2.platform", "cdc.control.schema", "cdc.change.tables.schema", "snapshot.locking.mode",
                 "snapshot.lock.timeout.ms", "snapshot.isolation.mode", "snapshot.query.mode", "driver.Security"):
        assert db2.find(name).status == "implemented", name
    assert db2.find("db2.platform").default == "LUW"
    assert db2.find("snapshot.locking.mode").default == "exclusive"
    accepted = {e.name: e.reason for e in db2.entries if e.status == "accepted"}
    assert set(accepted) == {"snapshot.max.threads", "tasks.max"} and "speed, not data" in accepted["snapshot.max.threads"]


def test_an_accepted_db2_property_starts_with_the_warning() -> None:
    report = connector_report(Config({**EXAMPLE, "snapshot.max.threads": "4", "db2.platform": "ZOS",
                                      "snapshot.locking.mode": "none", "snapshot.lock.timeout.ms": "-1"}))
    assert report.problems == [] and report.warning() == "accepted, no effect in cdc: snapshot.max.threads"


@pytest.mark.parametrize(("name", "message"), [
    ("db2.platfrom", "db2.platfrom: unknown property; did you mean db2.platform?"),
    ("cdc.control.shema", "cdc.control.shema: unknown property; did you mean cdc.control.schema?"),
    ("snapshot.locking.mod", "snapshot.locking.mod: unknown property; did you mean snapshot.locking.mode?"),
    ("database.server.name", "database.server.name: renamed topic.prefix in Debezium 2.0"),
])
def test_an_undocumented_db2_name_is_an_error_with_a_suggestion(name: str, message: str) -> None:
    assert connector_report(Config({**EXAMPLE, name: "x"})).errors == [message]


@pytest.mark.parametrize(("name", "value"), [("snapshot.locking.mode", "shared"), ("snapshot.lock.timeout.ms", "-2"),
                                              ("db2.platform", "ISERIES")])
def test_an_invalid_db2_value_names_the_property(name: str, value: str) -> None:
    problems = connector_report(Config({**EXAMPLE, name: value})).problems
    assert len(problems) == 1 and problems[0].startswith(name), problems
