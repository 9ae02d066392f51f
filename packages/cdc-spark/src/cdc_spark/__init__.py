"""cdc on Spark: every connector as a Structured Streaming source, parallel snapshots, apply-changes."""

from __future__ import annotations

from typing import Any


def register(spark: Any) -> None:
    """Register the ``cdc`` data source with ``spark`` (a SparkSession)."""
    from cdc_spark.source import CdcDataSource

    spark.dataSource.register(CdcDataSource)


def apply_changes(batch_df: Any, path: str, keys: list[str], format: str = "delta", **kwargs: Any) -> Any:
    """Apply one micro-batch of a table's change rows to a Delta (default) or Parquet table; see ``cdc_spark.apply``."""
    from cdc_spark.apply import apply_changes as apply

    return apply(batch_df, path, keys, format=format, **kwargs)


__all__ = ["apply_changes", "register"]
