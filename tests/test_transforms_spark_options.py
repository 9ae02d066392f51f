"""The Spark source refuses ``transforms=`` naming why, rather than ignoring it."""

from __future__ import annotations

import pytest

from cdc_core.errors import ConfigError

pytest.importorskip("cdc_spark", reason="cdc-spark is not installed")


def test_spark_source_refuses_transforms() -> None:
    from cdc_spark.options import parse_options

    options = {"connector": "postgres", "database.hostname": "db", "database.user": "u", "database.dbname": "d",
               "topic.prefix": "p"}
    parse_options(options)
    with pytest.raises(ConfigError) as e:
        parse_options({**options, "transforms": "unwrap",
                       "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState"})
    assert any(p.startswith("transforms: the Spark source does not apply transforms") for p in e.value.problems)
