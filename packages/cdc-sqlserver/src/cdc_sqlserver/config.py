"""The SQL Server connector's own properties, with Debezium's names, defaults and enum values."""

from __future__ import annotations

from cdc_core.config import Config, ConfigField as F, Fields
from cdc_core.config.formats import PORT_RANGE, hosts_problem

HOSTNAME = F("database.hostname", "string", required=True, validator=hosts_problem, allow_blank=False)
PORT = F("database.port", "int", 1433, minimum=PORT_RANGE[0], maximum=PORT_RANGE[1])
INSTANCE = F("database.instance", "string", doc="A named instance (ignored when database.port is set).")
USER = F("database.user", "string", allow_blank=False)
PASSWORD = F("database.password", "password")
NAMES = F("database.names", "list", required=True, doc="The databases to capture, comma-separated.")
ENCRYPT = F("database.encrypt", "boolean", True)
TRUST_SERVER_CERTIFICATE = F("database.trustServerCertificate", "boolean", False)
APPLICATION_INTENT = F("database.applicationIntent", "string")
SNAPSHOT_MODE = F(
    "snapshot.mode", "enum", "initial",
    allowed=("initial", "initial_only", "no_data", "when_needed", "always", "configuration_based", "custom"),
    aliases={"schema_only": "no_data"},
)
SNAPSHOT_ISOLATION_MODE = F("snapshot.isolation.mode", "enum", "repeatable_read",
                            allowed=("read_uncommitted", "read_committed", "repeatable_read", "snapshot", "exclusive"))
#: As Debezium 2.7.4: under snapshot.isolation.mode repeatable_read and exclusive, ``exclusive`` takes TABLOCKX on every
#: table while the snapshot's position is read, ``none`` no lock, ``custom`` a SnapshotLock plugin's statement.
SNAPSHOT_LOCKING_MODE = F("snapshot.locking.mode", "enum", "exclusive", allowed=("exclusive", "none", "custom"))
SNAPSHOT_FETCH_SIZE = F("snapshot.fetch.size", "int", 2000, minimum=1)
DATA_QUERY_MODE = F("data.query.mode", "enum", "function", allowed=("function", "direct"))
MAX_ITERATION_TRANSACTIONS = F("max.iteration.transactions", "int", 500, minimum=0)
STREAMING_FETCH_SIZE = F("streaming.fetch.size", "int", 0, minimum=0)
QUERY_TIMEOUT_MS = F("database.query.timeout.ms", "long", 600000, minimum=0)
INCLUDE_SCHEMA_CHANGES = F("include.schema.changes", "boolean", True)
AGENT_STATUS_QUERY = F(
    "database.sqlserver.agent.status.query", "string",
    "SELECT CASE WHEN dss.[status]=4 THEN 1 ELSE 0 END AS isRunning FROM [#db].sys.dm_server_services dss "
    "WHERE dss.[servicename] LIKE N'SQL Server Agent (%';",
    doc="Query telling whether SQL Server Agent runs (one row, one boolean; #db is the database's name).")
STORE_ONLY_CAPTURED_TABLES = F("schema.history.internal.store.only.captured.tables.ddl", "boolean", False)
STORE_ONLY_CAPTURED_DATABASES = F("schema.history.internal.store.only.captured.databases.ddl", "boolean", False)
SOURCE_STRUCT_VERSION = F("source.struct.version", "enum", "v2", allowed=("v2",))
INCREMENTAL_OPTION_RECOMPILE = F("incremental.snapshot.option.recompile", "boolean", False,
                                 doc="Add OPTION(RECOMPILE) to the incremental snapshot's SELECTs (a query-plan hint).")

FIELDS = Fields(
    [HOSTNAME, PORT, INSTANCE, USER, PASSWORD, NAMES, ENCRYPT, TRUST_SERVER_CERTIFICATE, APPLICATION_INTENT,
     SNAPSHOT_MODE, SNAPSHOT_ISOLATION_MODE, SNAPSHOT_LOCKING_MODE, SNAPSHOT_FETCH_SIZE, DATA_QUERY_MODE,
     MAX_ITERATION_TRANSACTIONS, STREAMING_FETCH_SIZE, QUERY_TIMEOUT_MS, INCLUDE_SCHEMA_CHANGES,
     AGENT_STATUS_QUERY, STORE_ONLY_CAPTURED_TABLES, STORE_ONLY_CAPTURED_DATABASES, SOURCE_STRUCT_VERSION,
     INCREMENTAL_OPTION_RECOMPILE],
    prefixes=("driver.", "snapshot.select.statement.overrides.", "schema.history.internal."),
)


def server_address(config: Config) -> str:
    """``host:port`` (or ``host\\instance`` when only an instance is named) for messages; never the password."""
    instance = config.get(INSTANCE)
    if instance and PORT.name not in config:
        return f"{config.get(HOSTNAME)}\\{instance}"
    return f"{config.get(HOSTNAME)}:{config.get(PORT)}"


def driver_properties(config: Config) -> dict[str, str]:
    """``driver.*`` properties with the prefix stripped: passed to the ODBC driver as connection-string keys."""
    return {k: str(v) for k, v in config.subset("driver.").items()}
