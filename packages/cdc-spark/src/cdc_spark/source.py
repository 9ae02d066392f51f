"""The ``cdc`` data source: every connector as a Spark batch and streaming source."""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader
from pyspark.sql.types import StructType

from cdc_core.envelope import EventBuilder
from cdc_core.errors import ConfigError
from cdc_core.logs import connector_logger
from cdc_core.schema import Schema
from cdc_core.spi.chunks import snapshot_chunks_for
from cdc_core.spi.connector import ConnectorContext
from cdc_spark.options import parse_options
from cdc_spark.rows import row_schema


class CdcDataSource(DataSource):
    """``spark.readStream.format("cdc").option("connector", "postgres").options(**debezium_props).load()``.

    Options are Debezium's connector properties (``connector`` or ``connector.class`` names the
    connector), plus ``table`` (one ``schema.table``: typed ``before``/``after`` columns and only
    that table's events), ``maxEventsPerTrigger`` (snapshot batches hold as many whole chunks as
    fit), ``snapshotChunkRows``, ``maxBufferedEvents``, ``snapshotHoldSeconds``,
    ``emptyBatchIntervalMs`` (how often a batch may run only to move the offset) and
    ``chunkReportHost`` (the driver's address executors report chunk reads to, for connectors
    whose chunks read at positions of their own: ``cdc_spark.reports``). Bad options fail in
    ``load()`` with every problem listed.
    """

    def __init__(self, options: dict[str, str]):
        super().__init__(options)
        self._value_schema: Schema | None = None
        self._checked = False

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return "cdc"

    def schema(self) -> StructType:
        """The fixed event columns, plus typed ``before``/``after`` when ``table`` names one table."""
        options = parse_options(self.options)
        self._checked = True
        if options.table:
            self._value_schema = value_schema(options)
        return row_schema(self._value_schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """The streaming reader."""
        from cdc_spark.stream import CdcStreamReader

        return CdcStreamReader(dict(self.options), schema, self._typed_schema(schema))

    def reader(self, schema: StructType) -> DataSourceReader:
        """The batch (snapshot) reader."""
        from cdc_spark.batch import CdcBatchReader

        return CdcBatchReader(dict(self.options), schema, self._typed_schema(schema))

    def _typed_schema(self, schema: StructType) -> Schema | None:
        if "after" not in schema.fieldNames():
            return None
        if self._value_schema is None:
            self._value_schema = value_schema(parse_options(self.options))
        return self._value_schema


def value_schema(options: Any) -> Schema:
    """The Connect ``Value`` schema of the table named by the ``table`` option (read from the database)."""
    cls = options.connector_class
    chunks_cls = snapshot_chunks_for(cls)
    if chunks_cls is None:
        raise ConfigError([f"table: the {cls.name} connector cannot describe its tables, so typed columns are unavailable"])
    tables = chunks_cls(options.config, None).describe([options.table])
    log = connector_logger("cdc.spark", cls.name, "-")
    connector = cls(options.config, ConnectorContext(log=log))
    builder = EventBuilder(options.config, cls.source_schema, connector.partition(),
                           catalog_in_data_collection=getattr(cls, "catalog_in_data_collection", False))
    return builder.table_events(tables[0]).value_schema
