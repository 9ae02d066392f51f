"""MariaDB's differences from MySQL, as data."""

from __future__ import annotations

from cdc_mysql.flavor import Flavor

MARIADB = Flavor(
    name="mariadb",
    class_names=("io.debezium.connector.mariadb.MariaDbConnector",),
    gtid_format="mariadb",
    query_log_variable="binlog_annotate_row_events",
    mariadb_protocol=True,
    binlog_example="mariadb-bin",
    replication_client_privilege="REPLICATION CLIENT (called BINLOG MONITOR since MariaDB 10.5)",
    snapshot_locking_modes=("minimal", "extended", "none", "custom"),  # no Percona backup lock
)
