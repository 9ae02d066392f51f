"""The MySQL/MariaDB connectors' own properties, with Debezium 2.7's names, defaults and enum values."""

from __future__ import annotations

import random
from typing import Any

from cdc_core.config import Config
from cdc_core.config import ConfigField as F
from cdc_core.config import Fields
from cdc_core.config import common
from cdc_core.config.formats import PORT_RANGE, host_problem

HOSTNAME = F("database.hostname", "string", "localhost", validator=host_problem, allow_blank=False,
             doc="The server's host name or address.")
PORT = F("database.port", "int", 3306, minimum=PORT_RANGE[0], maximum=PORT_RANGE[1])
USER = F("database.user", "string", "root", allow_blank=False)
PASSWORD = F("database.password", "password")
# The server keeps a replica's id in 32 unsigned bits.
SERVER_ID = F("database.server.id", "long", minimum=1, maximum=2**32 - 1, doc="The replica id this connector registers with; random when unset.")
SERVER_ID_OFFSET = F("database.server.id.offset", "long", 10000)
JDBC_DRIVER = F("database.jdbc.driver", "string", "com.mysql.cj.jdbc.Driver", doc="Accepted for compatibility; cdc uses PyMySQL.")
PROTOCOL = F("database.protocol", "string", "jdbc:mysql", doc="Accepted for compatibility; cdc uses PyMySQL.")
SSL_MODE = F("database.ssl.mode", "enum", "preferred",
             allowed=("disabled", "preferred", "required", "verify_ca", "verify_identity"))
SSL_KEYSTORE = F("database.ssl.keystore", "string", doc="The client's key and certificate: PKCS12, JKS or PEM.")
SSL_KEYSTORE_PASSWORD = F("database.ssl.keystore.password", "password")
SSL_TRUSTSTORE = F("database.ssl.truststore", "string", doc="CA certificates the server is checked against: PKCS12, "
                                                            "JKS or PEM.")
SSL_TRUSTSTORE_PASSWORD = F("database.ssl.truststore.password", "password")
# PyMySQL takes a connect timeout of at most a year.
CONNECT_TIMEOUT_MS = F("connect.timeout.ms", "long", 30000, minimum=1, maximum=31536000 * 1000)
QUERY_TIMEOUT_MS = F("database.query.timeout.ms", "long", 600000, minimum=0)
INITIAL_STATEMENTS = F("database.initial.statements", "string")
KEEP_ALIVE = F("connect.keep.alive", "boolean", True)
KEEP_ALIVE_INTERVAL_MS = F("connect.keep.alive.interval.ms", "long", 60000, minimum=1)
NONGRACEFUL_DISCONNECT = F("use.nongraceful.disconnect", "boolean", False)
DATABASE_INCLUDE = F("database.include.list", "regex-list", doc="Databases to capture (anchored regexes).")
DATABASE_EXCLUDE = F("database.exclude.list", "regex-list", doc="Databases not to capture.")
TABLE_IGNORE_BUILTIN = F("table.ignore.builtin", "boolean", True)
GTID_INCLUDES = F("gtid.source.includes", "regex-list")
GTID_EXCLUDES = F("gtid.source.excludes", "regex-list")
INCLUDE_QUERY = F("include.query", "boolean", False)
INCLUDE_SCHEMA_CHANGES = F("include.schema.changes", "boolean", True)
INCLUDE_SCHEMA_COMMENTS = F("include.schema.comments", "boolean", False)
BIGINT_UNSIGNED_MODE = F("bigint.unsigned.handling.mode", "enum", "long", allowed=("long", "precise"))
TIME_PRECISION_MODE = F("time.precision.mode", "enum", "adaptive_time_microseconds",
                        allowed=("adaptive_time_microseconds", "adaptive", "connect"))
ENABLE_TIME_ADJUSTER = F("enable.time.adjuster", "boolean", True)
INCONSISTENT_SCHEMA_MODE = F("inconsistent.schema.handling.mode", "enum", "fail", allowed=("fail", "warn", "skip"))
DESERIALIZATION_FAILURE_MODE = F("event.deserialization.failure.handling.mode", "enum", "fail",
                                 allowed=("fail", "warn", "ignore"))
BINLOG_BUFFER_SIZE = F("binlog.buffer.size", "int", 0, minimum=0,
                       doc="Events of a transaction held until its COMMIT or ROLLBACK (rolled-back ones are dropped); "
                           "0: off, events stream as they arrive.")
SNAPSHOT_MODE = F(
    "snapshot.mode", "enum", "initial",
    allowed=("initial", "initial_only", "no_data", "recovery", "when_needed", "always", "configuration_based",
             "custom"),
    # never: streaming starts at once, but binlog rows need the tables' definitions, so they are read as no_data does.
    aliases={"schema_only": "no_data", "schema_only_recovery": "recovery", "never": "no_data"},
)
SNAPSHOT_MODE_CUSTOM_NAME = F("snapshot.mode.custom.name", "string")
CB_SNAPSHOT_DATA = F("snapshot.mode.configuration.based.snapshot.data", "boolean", False)
CB_SNAPSHOT_SCHEMA = F("snapshot.mode.configuration.based.snapshot.schema", "boolean", False)
CB_START_STREAM = F("snapshot.mode.configuration.based.start.stream", "boolean", False)
CB_ON_SCHEMA_ERROR = F("snapshot.mode.configuration.based.snapshot.on.schema.error", "boolean", False)
CB_ON_DATA_ERROR = F("snapshot.mode.configuration.based.snapshot.on.data.error", "boolean", False)
SNAPSHOT_LOCKING_MODE = F("snapshot.locking.mode", "enum", "minimal",
                          allowed=("minimal", "minimal_percona", "extended", "none", "custom"))
SNAPSHOT_LOCKING_CUSTOM_NAME = F("snapshot.locking.mode.custom.name", "string")
SNAPSHOT_QUERY_MODE = F("snapshot.query.mode", "enum", "select_all", allowed=("select_all", "custom"))
SNAPSHOT_QUERY_CUSTOM_NAME = F("snapshot.query.mode.custom.name", "string")
SNAPSHOT_SELECT_OVERRIDES = F("snapshot.select.statement.overrides", "list")
SNAPSHOT_FETCH_SIZE = F("snapshot.fetch.size", "int", 10240, minimum=1)
SNAPSHOT_LOCK_TIMEOUT_MS = F("snapshot.lock.timeout.ms", "long", 10000, minimum=0)
SNAPSHOT_DELAY_MS = common.SNAPSHOT_DELAY_MS  # cdc_core.delays
SNAPSHOT_MAX_THREADS = F("snapshot.max.threads", "int", 1, minimum=1)
SNAPSHOT_INCLUDE_COLLECTIONS = F("snapshot.include.collection.list", "regex-list")
SNAPSHOT_TABLES_ORDER = F("snapshot.tables.order.by.row.count", "enum", "disabled",
                          allowed=("ascending", "descending", "disabled"))
MIN_ROW_COUNT_TO_STREAM = F("min.row.count.to.stream.results", "long", 1000, minimum=0)
STREAMING_DELAY_MS = common.STREAMING_DELAY_MS
READ_ONLY = F("read.only", "boolean", False)
# cdc's own: large transactions' rows events decoded and serialized in worker processes (cdc_mysql.stream_workers).
STREAMING_WORKER_PROCESSES = common.STREAMING_WORKER_PROCESSES
INCREMENTAL_ALLOW_SCHEMA_CHANGES = F("incremental.snapshot.allow.schema.changes", "boolean", False)
SKIP_UNPARSEABLE_DDL = F("schema.history.internal.skip.unparseable.ddl", "boolean", False)
STORE_ONLY_CAPTURED_TABLES = F("schema.history.internal.store.only.captured.tables.ddl", "boolean", False)
STORE_ONLY_CAPTURED_DATABASES = F("schema.history.internal.store.only.captured.databases.ddl", "boolean", False)
SOURCE_STRUCT_VERSION = F("source.struct.version", "enum", "v2", allowed=("v2",))

FIELDS = Fields(
    [
        HOSTNAME, PORT, USER, PASSWORD, SERVER_ID, SERVER_ID_OFFSET, JDBC_DRIVER, PROTOCOL, SSL_MODE, SSL_KEYSTORE,
        SSL_KEYSTORE_PASSWORD, SSL_TRUSTSTORE, SSL_TRUSTSTORE_PASSWORD, CONNECT_TIMEOUT_MS, QUERY_TIMEOUT_MS,
        INITIAL_STATEMENTS, KEEP_ALIVE, KEEP_ALIVE_INTERVAL_MS, NONGRACEFUL_DISCONNECT, DATABASE_INCLUDE,
        DATABASE_EXCLUDE, TABLE_IGNORE_BUILTIN, GTID_INCLUDES, GTID_EXCLUDES, INCLUDE_QUERY, INCLUDE_SCHEMA_CHANGES,
        INCLUDE_SCHEMA_COMMENTS, BIGINT_UNSIGNED_MODE, TIME_PRECISION_MODE, ENABLE_TIME_ADJUSTER,
        INCONSISTENT_SCHEMA_MODE, DESERIALIZATION_FAILURE_MODE, BINLOG_BUFFER_SIZE, SNAPSHOT_MODE,
        SNAPSHOT_MODE_CUSTOM_NAME, CB_SNAPSHOT_DATA, CB_SNAPSHOT_SCHEMA, CB_START_STREAM, CB_ON_SCHEMA_ERROR,
        CB_ON_DATA_ERROR, SNAPSHOT_LOCKING_MODE, SNAPSHOT_LOCKING_CUSTOM_NAME, SNAPSHOT_QUERY_MODE,
        SNAPSHOT_QUERY_CUSTOM_NAME, SNAPSHOT_SELECT_OVERRIDES, SNAPSHOT_FETCH_SIZE, SNAPSHOT_LOCK_TIMEOUT_MS,
        SNAPSHOT_DELAY_MS, SNAPSHOT_MAX_THREADS, SNAPSHOT_INCLUDE_COLLECTIONS, SNAPSHOT_TABLES_ORDER,
        MIN_ROW_COUNT_TO_STREAM, STREAMING_DELAY_MS, READ_ONLY, STREAMING_WORKER_PROCESSES, SKIP_UNPARSEABLE_DDL, STORE_ONLY_CAPTURED_TABLES,
        STORE_ONLY_CAPTURED_DATABASES, SOURCE_STRUCT_VERSION, INCREMENTAL_ALLOW_SCHEMA_CHANGES,
    ],
    prefixes=("driver.", "snapshot.select.statement.overrides.", "schema.history.internal."),
)

#: Pairs of this connector's properties that cannot be set together.
EXCLUSIVE_PAIRS = (
    ("database.include.list", "database.exclude.list"),
    ("gtid.source.includes", "gtid.source.excludes"),
)

#: Databases that hold the server's own tables, never captured while ``table.ignore.builtin`` is on.
BUILTIN_DATABASES = frozenset({"mysql", "sys", "information_schema", "performance_schema"})


def server_id(config: Config) -> int:
    """The configured ``database.server.id``, or a random one in Debezium's range (5400-6399)."""
    value = config.get(SERVER_ID)
    return int(value) if value else random.randint(5400, 6399)


def connect_args(config: Config, **extra: Any) -> dict[str, Any]:
    """PyMySQL ``connect`` keyword arguments (the password included: never log them)."""
    args: dict[str, Any] = {
        "host": config.get(HOSTNAME),
        "port": config.get(PORT),
        "user": config.get(USER),
        # As bytes in UTF-8, the connection's character set, as the mariadb/mysql clients send it: PyMySQL
        # would encode a str password in Latin-1 (wrong bytes for 'é', an error for '€').
        "password": (config.get(PASSWORD) or "").encode("utf-8"),
        "charset": "utf8mb4",
        "connect_timeout": max(1, config.get(CONNECT_TIMEOUT_MS) // 1000),
        "autocommit": True,
        # database.query.timeout.ms: how long a query may keep the connector waiting for the server's answer.
        # Debezium sets it as JDBC's query timeout, whose Connector/J timer stops once the first rows
        # arrive; PyMySQL's read timeout bounds each wait the same way and, unlike MariaDB's
        # max_statement_time, never ends a long snapshot SELECT that keeps streaming rows.
        "read_timeout": config.get(QUERY_TIMEOUT_MS) / 1000.0 or None,
    }
    # database.ssl.*: one TLS context (cdc_mysql.tls) for the binlog, snapshot and incremental connections.
    from cdc_mysql import tls

    mode = config.get(SSL_MODE)
    context = tls.context(config)
    if context is None:
        args["ssl_disabled"] = True  # PyMySQL otherwise tries TLS whenever the server offers it ("preferred")
    elif mode == "preferred":
        args["tls_context"] = context  # cdc_mysql.connection.Connection: used if the server offers TLS
    else:
        args["ssl"] = context  # TLS or fail
    # driver.*: PyMySQL's options by name, Connector/J's where PyMySQL has one (cdc_mysql.driver_options).
    from cdc_mysql.driver_options import pymysql_args

    driver, _ = pymysql_args(config.subset("driver"), pymysql_options())
    if "read_timeout" in driver and args["read_timeout"]:
        driver["read_timeout"] = min(float(driver["read_timeout"]), args["read_timeout"])  # the earlier limit holds
    args.update(driver)
    args.update(extra)
    return args


def pymysql_options() -> frozenset[str]:
    """The keyword arguments PyMySQL's ``connect`` takes (``driver.<name>`` passes one through)."""
    import inspect

    import pymysql.connections

    return frozenset(inspect.signature(pymysql.connections.Connection.__init__).parameters) - {"self"}


def ignored_driver_options(config: Config) -> list[str]:
    """``driver.*`` properties PyMySQL has no option for (Connector/J's without an equivalent)."""
    from cdc_mysql.driver_options import pymysql_args

    return pymysql_args(config.subset("driver"), pymysql_options())[1]


def deserialization_failure_mode(config: Config) -> str:
    """What to do with a binlog event that cannot be decoded: ``fail``, ``warn`` or ``ignore``.

    ``event.deserialization.failure.handling.mode`` is deprecated in favour of the common
    ``event.processing.failure.handling.mode``; as in Debezium, the deprecated one wins when it is set.
    """
    if config.get(DESERIALIZATION_FAILURE_MODE.name) not in (None, ""):
        return config.get(DESERIALIZATION_FAILURE_MODE)
    mode = config.get(common.FAILURE_HANDLING)
    return "ignore" if mode == "skip" else mode


def server_address(config: Config) -> str:
    """``host:port`` of the configured server, for messages."""
    return f"{config.get(HOSTNAME)}:{config.get(PORT)}"
