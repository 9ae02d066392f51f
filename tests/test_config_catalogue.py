"""The property catalogue: generated from the specification, and how a configuration's properties are sorted.

Every example configuration of the specification validates; Debezium Server configurations in the
shapes users write them (Kafka sink, a transforms chain, Avro, Kafka offsets and history, Redis)
have no property reported unknown; an undocumented name gets a suggestion; the README's table is
the catalogue's.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import runpy
from pathlib import Path

import pytest

from cdc_core.cli import main
from cdc_core.config import Config
from cdc_core.config.catalogue import Catalogue
from cdc_core.engine import connector_report

ROOT = Path(__file__).resolve().parent.parent
SPEC_CONFIGS = sorted((ROOT / "tests/data/spec_configs").glob("*.json"))
SERVER_CONFIGS = sorted((ROOT / "tests/data/server_configs").glob("*.properties"))
SEEDS = Path("/work/shared/seeds/000_a4d1630084142ba0.txt")


@pytest.fixture(autouse=True)
def _logging():
    """main() configures logging; put the root logger back afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def _script(name: str) -> dict:
    return runpy.run_path(str(ROOT / "scripts" / name))


@pytest.mark.skipif(not SEEDS.exists(), reason=f"the specification's seed {SEEDS} is not on this machine")
def test_the_catalogue_is_what_the_specification_and_the_code_say() -> None:
    """Regenerating the catalogue from the seeds, the decisions and the code's fields changes nothing."""
    assert _script("generate_catalogue.py")["main"](["--check"]) == 0, "run scripts/generate_catalogue.py"


def test_the_readme_table_is_the_catalogues() -> None:
    assert _script("generate_readme_properties.py")["main"](["--check"]) == 0, (
        "README.md is stale: run scripts/generate_readme_properties.py")


def test_the_catalogue_knows_the_documented_properties_and_defaults() -> None:
    pg, mysql = Catalogue.load("postgres"), Catalogue.load("mysql")
    assert pg is not None and mysql is not None
    assert pg.find("topic.naming.strategy").default == "io.debezium.schema.SchemaTopicNamingStrategy"
    assert mysql.find("topic.naming.strategy").default == "io.debezium.schema.DefaultTopicNamingStrategy"
    assert pg.find("retriable.restart.connector.wait.ms").default.startswith("10000")
    for name in ("topic.naming.strategy", "max.queue.size.in.bytes", "custom.metric.tags", "topic.cache.size"):
        assert pg.find(name).status == mysql.find(name).status == "implemented", name
    assert mysql.find("column.mask.hash.SHA-256.with.salt.CzQMA0cB5K").status == "implemented"
    assert pg.find("driver.loginTimeout").status == "implemented"  # pgjdbc's, as libpq parameters (driver_options)
    assert pg.find("slot.stream.params").status == "implemented"
    assert pg.find("replica.identity.autoset.values").status == "implemented"
    assert pg.find("transforms") is None  # not a connector chapter's table: owned by the transforms
    for name in ("snapshot.delay.ms", "streaming.delay.ms", "database.sslmode", "database.sslrootcert"):
        assert pg.find(name).status == "implemented", name


@pytest.mark.parametrize("path", SPEC_CONFIGS, ids=[p.name for p in SPEC_CONFIGS])
def test_every_example_configuration_of_the_specification_validates(path: Path) -> None:
    report = connector_report(Config(json.loads(path.read_text())))
    assert report.problems == []


def test_the_examples_were_extracted() -> None:
    names = [p.name for p in SPEC_CONFIGS]
    for connector in ("mysql", "mariadb", "postgres"):
        assert any(n.startswith(f"{connector}_example_") for n in names), connector
    assert len(names) >= 10


def _base(**extra: str) -> Config:
    return Config({"connector.class": "postgres", "topic.prefix": "shop", "database.hostname": "localhost",
                   "database.dbname": "db", **extra})


@pytest.fixture
def refused_example(monkeypatch) -> str:
    """PostgreSQL's ``schema.refresh.mode`` made a refused property (default ``columns_diff``): every refusal the
    catalogue had so far has since been implemented or accepted, and the mechanism must keep working."""
    original = Catalogue.load

    def load(cls, connector: str):
        found = original(connector)
        if found is None or connector != "postgres":
            return found
        return Catalogue(connector, [dataclasses.replace(e, status="refused", reason="an example refusal")
                                     if e.name == "schema.refresh.mode" else e for e in found.entries])

    monkeypatch.setattr(Catalogue, "load", classmethod(load))
    return "schema.refresh.mode"


def test_documented_properties_cdc_does_not_implement_are_accepted_or_refused(refused_example) -> None:
    report = connector_report(_base(**{"schema.refresh.mode": "columns_diff_exclude_unchanged_toast",
                                       "tasks.max": "1", "slot.stream.params": "origin=none",
                                       "xmin.fetch.interval.ms": "100"}))
    assert report.ignored == ["tasks.max"]
    assert report.warning() == "accepted, no effect in cdc: tasks.max"
    assert report.refused == ["schema.refresh.mode: documented, but cdc does not implement it, and ignoring it would "
                              "change the data delivered (an example refusal)"]
    assert report.errors == []


def test_an_accepted_property_starts_with_the_warning() -> None:
    report = connector_report(_base(**{"schema.refresh.mode": "columns_diff_exclude_unchanged_toast"}))
    assert report.problems == [] and report.warning() == "accepted, no effect in cdc: schema.refresh.mode"


def test_a_refused_property_at_its_documented_default_is_harmless(refused_example) -> None:
    off = connector_report(_base(**{"schema.refresh.mode": "columns_diff"}))
    on = connector_report(_base(**{"schema.refresh.mode": "columns_diff_exclude_unchanged_toast"}))
    assert off.problems == [] and off.ignored == ["schema.refresh.mode"]
    assert [p.split(":")[0] for p in on.refused] == ["schema.refresh.mode"]


@pytest.mark.parametrize(("name", "message"), [
    ("tabel.include.list", "tabel.include.list: unknown property; did you mean table.include.list?"),
    ("topic.naming.stratgey", "topic.naming.stratgey: unknown property; did you mean topic.naming.strategy?"),
    ("database.server.name", "database.server.name: renamed topic.prefix in Debezium 2.0"),
    ("database.history.kafka.topic", "database.history.kafka.topic: renamed schema.history.internal.kafka.topic in Debezium 2.0"),
    ("completely.made.up", "completely.made.up: unknown property"),
])
def test_an_undocumented_name_is_an_error_with_a_suggestion(name: str, message: str) -> None:
    assert connector_report(_base(**{name: "x"})).errors == [message]


def test_properties_owned_by_other_parts_stay_accepted() -> None:
    owned = {"transforms": "unwrap", "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
             "predicates": "p", "predicates.p.type": "x", "signal.kafka.topic": "s", "notification.sink.topic.name": "n",
             "offset.storage.redis.address": "r:6379", "schema.history.internal.redis.key": "k",
             "converters": "c", "c.type": "com.example.Converter", "c.param": "1"}
    report = connector_report(_base(**owned))
    assert [p for p in report.problems if "unknown property" in p or "documented" in p] == []
    assert report.ignored == []


@pytest.mark.parametrize("path", SERVER_CONFIGS, ids=[p.name for p in SERVER_CONFIGS])
def test_debezium_server_configurations_validate(path: Path, capsys) -> None:
    """``cdc validate`` on Debezium Server files as users write them (Kafka and Redis sinks, Kafka offsets and
    history, a transforms chain, Avro): each is valid as it is."""
    code = main(["validate", str(path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.rstrip().endswith("configuration is valid")


def test_validate_prints_the_three_groups(tmp_path: Path, capsys, refused_example) -> None:
    path = tmp_path / "app.properties"
    path.write_text("\n".join([
        "debezium.sink.type=stdout",
        "debezium.source.connector.class=io.debezium.connector.postgresql.PostgresConnector",
        "debezium.source.topic.prefix=shop", "debezium.source.database.hostname=localhost",
        "debezium.source.database.dbname=db", "debezium.source.databse.user=x",
        "debezium.source.schema.refresh.mode=columns_diff_exclude_unchanged_toast", "debezium.source.tasks.max=1",
        "debezium.sink.kinesis.region=eu-central-1", "quarkus.log.level=INFO", ""]))
    assert main(["validate", str(path)]) == 2
    out, err = capsys.readouterr()
    assert err.splitlines()[:3] == [
        "invalid configuration:",
        "  debezium.source.databse.user: unknown property; did you mean debezium.source.database.user?",
        "refused (documented, but cdc does not implement them and ignoring them would change the data):",
    ]
    assert err.splitlines()[3].startswith("  debezium.source.schema.refresh.mode: documented, but cdc does not")
    assert out.splitlines() == [
        "accepted, no effect in cdc:",
        "  debezium.sink.kinesis.region (a property of another sink; debezium.sink.type is stdout)",
        "  quarkus.log.level (set the level with cdc --log-level)",
        "  debezium.source.tasks.max (cdc runs one connector task, as Debezium's PostgreSQL connector does (its taskConfigs returns one task whatever tasks.max says))",
    ]


@pytest.mark.parametrize("name", ["topic.delimiter", "topic.transaction", "topic.heartbeat.prefix"])
def test_topic_name_parts_are_checked_as_debezium_checks_them(name: str) -> None:
    assert connector_report(_base(**{name: "a:b"})).errors == [
        f"{name}: 'a:b' may contain only letters, digits, '.', '_' and '-'"]
