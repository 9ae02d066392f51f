"""SQL Server's topic names: ``<prefix>.<database>.<schema>.<table>``.

Debezium's SchemaTopicNamingStrategy in multi-partition mode (SQL Server's connector) puts the
database name between the prefix and the schema; the SQL Server connector makes this its default.
"""

from __future__ import annotations

from cdc_core.relational import TableId
from cdc_core.topics import SchemaTopicNamingStrategy, sanitized_topic_name


class SqlServerTopicNamingStrategy(SchemaTopicNamingStrategy):
    """SchemaTopicNamingStrategy with the database: ``<prefix>.<database>.<schema>.<table>``."""

    name = "sqlserver-schema"
    class_names = ()

    def data_change_topic(self, table: TableId) -> str:
        """``<prefix>.<catalog>.<schema>.<table>``, blank parts left out."""
        return sanitized_topic_name(self.join([self.prefix, table.catalog, table.schema, table.table]))
