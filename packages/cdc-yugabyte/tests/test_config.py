"""The YugabyteDB connector's names, defaults and property set (YB-01..YB-03, YB-13, YB-26)."""

from __future__ import annotations

import pytest

from cdc_core.config import Config
from cdc_core.engine import connector_problems
from cdc_core.plugins import registry
from cdc_postgres import config as pgc
from cdc_yugabyte.config import for_postgres
from cdc_yugabyte.connector import YugabyteDBConnector

BASE = {"connector.class": "yugabytedb", "database.dbname": "yugabyte", "topic.prefix": "dbserver"}


@pytest.mark.parametrize("name", ["io.debezium.connector.postgresql.YugabyteDBConnector",
                                  "io.debezium.connector.YugabyteDB.YBPostgresConnector",
                                  "io.debezium.connector.YugabyteDB.PostgresConnector", "yugabytedb", "yugabyte"])
def test_every_class_name_is_the_yugabytedb_connector(name):
    assert registry().get("connector", name) is YugabyteDBConnector


def test_defaults_port_5433_and_yboutput():
    """The port reaches libpq; yboutput is the default plug-in; heartbeats are off (the chapter has none)."""
    config = Config(BASE)
    assert "port=5433" in pgc.conninfo(for_postgres(config))
    assert YugabyteDBConnector.defaults == {"database.port": 5433, "plugin.name": "yboutput"}
    assert connector_problems(config) == []


def test_multi_host_list_reaches_libpq_with_each_port():
    config = for_postgres(Config({**BASE, "database.hostname": "yb1:5433,yb2:5434,yb3"}))
    info = pgc.conninfo(config)
    assert "host=yb1,yb2,yb3" in info and "port=5433,5434,5433" in info
    assert pgc.server_address(config) == "yb1:5433,yb2:5434,yb3:5433"


def test_decoderbufs_is_refused_naming_the_plugins_there_are():
    assert connector_problems(Config({**BASE, "plugin.name": "decoderbufs"})) == [
        "plugin.name: 'decoderbufs' is not available on YugabyteDB (the chapter's default is a copy of PostgreSQL's); "
        "use plugin.name=yboutput (the default) or pgoutput"]


def test_properties_the_chapter_lacks():
    """Refused where their effect cannot be had; the others are accepted (and warned about at start)."""
    problems = connector_problems(Config({**BASE, "snapshot.mode.custom.name": "x", "read.only": "true",
                                          "snapshot.mode.configuration.based.snapshot.data": "true",
                                          "heartbeat.interval.ms": 1000}))
    assert problems == [
        "snapshot.mode.custom.name: not a property of the YugabyteDB connector (YugabyteDB's connector names its "
        "custom snapshotter with snapshot.custom.class)",
        "read.only: not a property of the YugabyteDB connector (YugabyteDB's connector has no read-only incremental "
        "snapshots)",
        "snapshot.mode.configuration.based.snapshot.data: not a property of the YugabyteDB connector (YugabyteDB has "
        "no snapshot.mode=configuration_based)"]
    assert connector_problems(Config({**BASE, "heartbeat.interval.ms": 1000, "read.only": "false"})) == []


def test_custom_snapshot_mode_needs_snapshot_custom_class():
    from cdc_core.errors import ConfigError

    with pytest.raises(ConfigError, match="snapshot.custom.class: is required with snapshot.mode=custom"):
        connector_problems(Config({**BASE, "snapshot.mode": "custom"}))


def test_replica_identity_autoset_takes_change_and_refuses_index():
    assert connector_problems(Config({**BASE, "replica.identity.autoset.values": "public.a:CHANGE,public.b:FULL"})) == []
    [problem] = connector_problems(Config({**BASE, "replica.identity.autoset.values": "public.a:INDEX idx"}))
    assert "YugabyteDB has no REPLICA IDENTITY USING INDEX" in problem
