"""Spark fixtures: one local SparkSession for the whole test run, with the ``cdc`` source registered."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

import cdc_spark


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """A ``local[2]`` SparkSession (UI off, 2 shuffle partitions), stopped after the run."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("cdc-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    cdc_spark.register(session)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def pg_props(pg_server, pg_db) -> dict[str, str]:
    """Debezium properties for the test database (as Spark options: strings)."""
    return {
        "connector": "postgres",
        "database.hostname": pg_server.host,
        "database.port": str(pg_server.port),
        "database.user": pg_server.user,
        "database.dbname": pg_db,
        "topic.prefix": "sp",
        "poll.interval.ms": "100",
        "status.update.interval.ms": "200",
    }
