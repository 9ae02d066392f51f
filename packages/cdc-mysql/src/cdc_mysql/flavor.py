"""What differs between MySQL and MariaDB, as data: names, schema names, GTID format, server variables."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Flavor:
    """One server family's names and behaviours; the connector code reads them, never branches on a name."""

    #: Short ``connector.class`` name and ``source.connector`` value.
    name: str
    #: Debezium class names ``connector.class`` accepts.
    class_names: tuple[str, ...]
    #: GTID syntax: ``mysql`` (``uuid:1-5,uuid2:3``) or ``mariadb`` (``domain-server-seq,...``).
    gtid_format: str
    #: The server variable that makes the binlog carry each row event's SQL text (``include.query``).
    query_log_variable: str
    #: Whether the server speaks MariaDB's replication dialect (GTID connect state, annotate-rows flag).
    mariadb_protocol: bool
    #: The example binlog base name in docs and messages.
    binlog_example: str
    #: How messages name the privilege that allows SHOW MASTER STATUS / SHOW BINARY LOGS.
    replication_client_privilege: str = "REPLICATION CLIENT"
    #: The ``snapshot.locking.mode`` values the server family supports (``custom`` names a SnapshotLock plugin).
    snapshot_locking_modes: tuple[str, ...] = ("minimal", "minimal_percona", "extended", "none", "custom")

    @property
    def source_schema_name(self) -> str:
        """The Connect name of the ``source`` struct."""
        return f"io.debezium.connector.{self.name}.Source"

    @property
    def schema_change_key_name(self) -> str:
        """The Connect name of schema change event keys."""
        return f"io.debezium.connector.{self.name}.SchemaChangeKey"

    @property
    def schema_change_value_name(self) -> str:
        """The Connect name of schema change event values."""
        return f"io.debezium.connector.{self.name}.SchemaChangeValue"


MYSQL = Flavor(
    name="mysql",
    class_names=("io.debezium.connector.mysql.MySqlConnector",),
    gtid_format="mysql",
    query_log_variable="binlog_rows_query_log_events",
    mariadb_protocol=False,
    binlog_example="mysql-bin",
)
