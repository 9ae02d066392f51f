"""The Db2 connector's own properties, with Debezium's names, defaults and enum values."""

from __future__ import annotations

from cdc_core.config import Config, ConfigField as F, Fields
from cdc_core.config.formats import PORT_RANGE, hosts_problem

HOSTNAME = F("database.hostname", "string", required=True, validator=hosts_problem, allow_blank=False)
PORT = F("database.port", "int", 50000, minimum=PORT_RANGE[0], maximum=PORT_RANGE[1])
USER = F("database.user", "string", allow_blank=False)
PASSWORD = F("database.password", "password")
DBNAME = F("database.dbname", "string", required=True, allow_blank=False, doc="The database to capture.")
CONTROL_SCHEMA = F("cdc.control.schema", "string", "ASNCDC", allow_blank=False,
                   doc="The schema of the ASN control tables (IBMSNAP_REGISTER, IBMSNAP_UOW, ...).")
CHANGE_TABLES_SCHEMA = F("cdc.change.tables.schema", "string", "ASNCDC", allow_blank=False,
                         doc="The schema of the change-data (CD) tables.")
PLATFORM = F("db2.platform", "enum", "luw", allowed=("luw", "zos"), doc="LUW or ZOS (any case).")
SNAPSHOT_MODE = F(
    "snapshot.mode", "enum", "initial",
    # Debezium 2.7.4's Db2 SnapshotMode has recovery too (Db2ConnectorIT.shouldCreateSnapshotSchemaOnlyRecovery).
    allowed=("initial", "initial_only", "no_data", "recovery", "when_needed", "always", "configuration_based", "custom"),
    aliases={"schema_only": "no_data"},
)
SNAPSHOT_ISOLATION_MODE = F("snapshot.isolation.mode", "enum", "repeatable_read",
                            allowed=("read_uncommitted", "read_committed", "repeatable_read", "exclusive"))
SNAPSHOT_LOCKING_MODE = F("snapshot.locking.mode", "enum", "exclusive", allowed=("exclusive", "none", "custom"),
                          doc="exclusive: each table is locked (Db2's SELECT ... WHERE 0=1 WITH CS) while its "
                              "structure is read under repeatable_read/exclusive; none: no lock; custom: a SnapshotLock plugin.")
SNAPSHOT_LOCK_TIMEOUT_MS = F("snapshot.lock.timeout.ms", "long", 10000, minimum=-1,
                             doc="CURRENT LOCK TIMEOUT while the snapshot takes its locks (whole seconds, rounded up); "
                                 "0 fails at once, -1 waits.")
SNAPSHOT_FETCH_SIZE = F("snapshot.fetch.size", "int", 2000, minimum=1)
QUERY_TIMEOUT_MS = F("database.query.timeout.ms", "long", 600000, minimum=0)
INCLUDE_SCHEMA_CHANGES = F("include.schema.changes", "boolean", True)

FIELDS = Fields(
    [HOSTNAME, PORT, USER, PASSWORD, DBNAME, CONTROL_SCHEMA, CHANGE_TABLES_SCHEMA, PLATFORM, SNAPSHOT_MODE,
     SNAPSHOT_ISOLATION_MODE, SNAPSHOT_LOCKING_MODE, SNAPSHOT_LOCK_TIMEOUT_MS, SNAPSHOT_FETCH_SIZE, QUERY_TIMEOUT_MS, INCLUDE_SCHEMA_CHANGES],
    prefixes=("driver.", "snapshot.select.statement.overrides.", "schema.history.internal."),
)


def server_address(config: Config) -> str:
    """``host:port/dbname`` for messages; never the password."""
    return f"{config.get(HOSTNAME)}:{config.get(PORT)}/{config.get(DBNAME)}"


def driver_properties(config: Config) -> dict[str, str]:
    """``driver.*`` properties with the prefix stripped: CLI connection-string keywords (``SECURITY=SSL``...)."""
    return {k: str(v) for k, v in config.subset("driver.").items()}
