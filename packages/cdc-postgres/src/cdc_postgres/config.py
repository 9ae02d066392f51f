"""The PostgreSQL connector's own properties, with Debezium's names, defaults and enum values."""

from __future__ import annotations

import os
import re

from cdc_core.config import ConfigField as F
from cdc_core.config import Fields, common
from cdc_core.config.formats import PORT_RANGE, host_problem, hosts_problem, name_bytes_problem

from cdc_postgres.driver_options import libpq_params
from cdc_postgres.replica_identity import autoset_problem
from cdc_postgres.stream_params import stream_params_problem

_SLOT_NAME = re.compile(r"[a-z0-9_]{1,63}")


def _slot_name_ok(value: str) -> str | None:
    # PostgreSQL's own rule (ReplicationSlotValidateName), which Debezium checks too.
    if not _SLOT_NAME.fullmatch(value):
        return (f"{value!r} is not a valid replication slot name: use 1 to 63 lower-case letters, digits and "
                "underscores")
    return None


def hosts_ports_problem(value: str) -> str | None:
    """Why ``value`` is not ``host[:port][,host[:port]...]`` (libpq's multi-host list, ports inline), or None."""
    for entry in value.split(","):
        host, sep, port = entry.strip().rpartition(":")
        if not sep or ":" in host or not host or host.startswith("/"):
            problem = hosts_problem(entry)  # a host, an IPv6 address or a Unix socket directory
        elif not port.isdigit() or not PORT_RANGE[0] <= int(port) <= PORT_RANGE[1]:
            problem = f"{entry.strip()!r}: the port after ':' must be a number from {PORT_RANGE[0]} to {PORT_RANGE[1]}"
        else:
            problem = host_problem(host)
        if problem:
            return problem
    return None


def _plugin_supported(value: str) -> str | None:
    if value != "pgoutput":
        return f"{value!r} is not supported: cdc decodes the pgoutput protocol only; set plugin.name=pgoutput"
    return None


# A host, or host[:port] entries separated by commas: libpq tries them in order on every connect.
HOSTNAME = F("database.hostname", "string", "localhost", validator=hosts_ports_problem, allow_blank=False)
PORT = F("database.port", "int", 5432, minimum=PORT_RANGE[0], maximum=PORT_RANGE[1])
USER = F("database.user", "string", "postgres", validator=name_bytes_problem, allow_blank=False)
PASSWORD = F("database.password", "password")
DBNAME = F("database.dbname", "string", required=True, validator=name_bytes_problem, allow_blank=False)
SSLMODE = F("database.sslmode", "enum", "prefer", allowed=("disable", "allow", "prefer", "require", "verify-ca", "verify-full"))
SSLCERT = F("database.sslcert", "string", doc="The client certificate (PEM) sent to the server (libpq sslcert).")
SSLKEY = F("database.sslkey", "string", doc="The client certificate's private key (PEM or DER; libpq sslkey).")
SSLPASSWORD = F("database.sslpassword", "password", doc="The passphrase of an encrypted database.sslkey.")
SSLROOTCERT = F("database.sslrootcert", "string", doc="The CA certificate(s) verify-ca/verify-full check the server with.")
# A JDBC SSLSocketFactory class: nothing to load in libpq; accepted with a warning at start (see TLS_NOTES).
SSLFACTORY = F("database.sslfactory", "string", doc="Accepted for compatibility: libpq's checks follow database.sslmode.")
TCP_KEEPALIVE = F("database.tcpKeepAlive", "boolean", True)
# libpq's connect_timeout is an int of seconds.
CONNECTION_TIMEOUT = F("connect.timeout.ms", "long", 30000, minimum=1, maximum=(2**31 - 1) * 1000)
# Debezium's doc gives decoderbufs as the default; cdc speaks pgoutput only, so that is its default.
PLUGIN_NAME = F("plugin.name", "enum", "pgoutput", allowed=("pgoutput", "decoderbufs"), validator=_plugin_supported)
SLOT_NAME = F("slot.name", "string", "debezium", validator=_slot_name_ok, allow_blank=False)
SLOT_DROP_ON_STOP = F("slot.drop.on.stop", "boolean", False)
SLOT_MAX_RETRIES = F("slot.max.retries", "int", 6, minimum=0)
SLOT_RETRY_DELAY_MS = F("slot.retry.delay.ms", "long", 10000, minimum=0)
FLUSH_LSN_SOURCE = F("flush.lsn.source", "boolean", True, doc="Confirm processed LSNs to the slot (false: someone else does).")
PUBLICATION_NAME = F("publication.name", "string", "dbz_publication", validator=name_bytes_problem, allow_blank=False)
PUBLICATION_AUTOCREATE = F(
    "publication.autocreate.mode", "enum", "all_tables", allowed=("all_tables", "filtered", "disabled", "no_tables")
)
SNAPSHOT_MODE = F(
    "snapshot.mode",
    "enum",
    "initial",
    allowed=("initial", "initial_only", "no_data", "always", "when_needed", "configuration_based", "custom"),
    aliases={"never": "no_data", "exported": "initial"},
)
SNAPSHOT_LOCKING_MODE = F("snapshot.locking.mode", "enum", "none", allowed=("shared", "none", "custom"))
SNAPSHOT_FETCH_SIZE = F("snapshot.fetch.size", "int", 10240, minimum=1)
# Sent as the snapshot transaction's lock_timeout, which PostgreSQL keeps in an int of milliseconds.
SNAPSHOT_LOCK_TIMEOUT_MS = F("snapshot.lock.timeout.ms", "long", 10000, minimum=0, maximum=2**31 - 1)
STATUS_UPDATE_INTERVAL_MS = F("status.update.interval.ms", "long", 10000, minimum=1)
DATABASE_INITIAL_STATEMENTS = F("database.initial.statements", "string")
MESSAGE_PREFIX_INCLUDE = F("message.prefix.include.list", "regex-list")
MESSAGE_PREFIX_EXCLUDE = F("message.prefix.exclude.list", "regex-list")
INTERVAL_MODE = F("interval.handling.mode", "enum", "numeric", allowed=("numeric", "string"))
MONEY_FRACTION_DIGITS = F("money.fraction.digits", "int", 2, minimum=0)
HSTORE_MODE = F("hstore.handling.mode", "enum", "json", allowed=("json", "map"))
INCLUDE_UNKNOWN_DATATYPES = F("include.unknown.datatypes", "boolean", False)
# A relational property every Debezium 2.7 connector accepts; its PostgreSQL connector reads no
# column comments (JdbcConnection.readTableColumn never sets one), so it changes nothing here either.
INCLUDE_SCHEMA_COMMENTS = F("include.schema.comments", "boolean", False)
# Incremental snapshot watermarks from transaction snapshots and WAL positions, nothing written (PG >= 13;
# cdc_postgres.readonly).
READ_ONLY = F("read.only", "boolean", False)
# Captured tables' REPLICA IDENTITY set at start (cdc_postgres.replica_identity), as Debezium's ReplicaIdentityMapper.
REPLICA_IDENTITY_AUTOSET = F("replica.identity.autoset.values", "string", validator=autoset_problem)
# As PostgresTaskContext.getSlotXmin: the slot's catalog_xmin, re-read at most this often while streaming, is
# written as source.xmin and the offsets' xmin (0: not tracked, source.xmin null).
XMIN_FETCH_INTERVAL_MS = F("xmin.fetch.interval.ms", "long", 0, minimum=0)
# key=value;... passed to pgoutput at START_REPLICATION (cdc_postgres.stream_params).
# statement_timeout of cdc's query connections (cdc_postgres.query_timeout); an int of milliseconds in PostgreSQL.
QUERY_TIMEOUT_MS = F("database.query.timeout.ms", "long", 600000, minimum=0, maximum=2**31 - 1)
SLOT_STREAM_PARAMS = F("slot.stream.params", "string", validator=stream_params_problem)
# cdc's own: long runs of row changes decoded and serialized in worker processes (cdc_postgres.stream_workers).
STREAMING_WORKER_PROCESSES = common.STREAMING_WORKER_PROCESSES

FIELDS = Fields(
    [
        HOSTNAME, PORT, USER, PASSWORD, DBNAME, SSLMODE, SSLCERT, SSLKEY, SSLPASSWORD, SSLROOTCERT, SSLFACTORY,
        TCP_KEEPALIVE, CONNECTION_TIMEOUT,
        PLUGIN_NAME, SLOT_NAME, SLOT_DROP_ON_STOP, SLOT_MAX_RETRIES, SLOT_RETRY_DELAY_MS, FLUSH_LSN_SOURCE, PUBLICATION_NAME, PUBLICATION_AUTOCREATE,
        SNAPSHOT_MODE, SNAPSHOT_LOCKING_MODE, SNAPSHOT_FETCH_SIZE, SNAPSHOT_LOCK_TIMEOUT_MS, STATUS_UPDATE_INTERVAL_MS, DATABASE_INITIAL_STATEMENTS,
        INTERVAL_MODE, MONEY_FRACTION_DIGITS, MESSAGE_PREFIX_INCLUDE, MESSAGE_PREFIX_EXCLUDE,
        HSTORE_MODE, INCLUDE_UNKNOWN_DATATYPES, INCLUDE_SCHEMA_COMMENTS, READ_ONLY, REPLICA_IDENTITY_AUTOSET,
        XMIN_FETCH_INTERVAL_MS, SLOT_STREAM_PARAMS, QUERY_TIMEOUT_MS, STREAMING_WORKER_PROCESSES,
    ],
    # pgjdbc's connection properties, passed on as libpq parameters where libpq has them (cdc_postgres.driver_options).
    prefixes=("driver.",),
)


SESSION_OPTIONS = (
    "-c TimeZone=UTC -c DateStyle=ISO -c IntervalStyle=postgres -c bytea_output=hex "
    "-c extra_float_digits=1 -c lc_monetary=C"
)


def conninfo(config, **extra: str) -> str:
    """A libpq conninfo string for the configured server (the password included; never log it)."""
    from psycopg.conninfo import make_conninfo

    hosts, ports = host_list(config.get(HOSTNAME), config.get(PORT))
    params = {
        "host": ",".join(hosts),
        "port": ",".join(ports),
        "user": config.get(USER),
        "dbname": config.get(DBNAME),
        "sslmode": config.get(SSLMODE),
        "connect_timeout": str(max(1, config.get(CONNECTION_TIMEOUT) // 1000)),
        "application_name": "cdc",
        # The converters parse PostgreSQL's text output: pin the settings that shape it, on every
        # connection (the walsender formats pgoutput values with its own session's settings).
        "options": SESSION_OPTIONS,
        "client_encoding": "UTF8",
    }
    password = config.get(PASSWORD)
    if password:
        params["password"] = password
    params.update(tls_params(config))
    params["keepalives"] = "1" if config.get(TCP_KEEPALIVE) else "0"
    params.update(extra)
    # driver.*: pgjdbc's properties with a libpq equivalent (cdc_postgres.driver_options). Their options come
    # first, so the pinned output settings, written after them, still hold.
    driver, _ = libpq_params(config.subset("driver"))
    if "options" in driver:
        driver["options"] = f"{driver['options']} {params['options']}"
    params.update(driver)
    return make_conninfo("", **params)


def initial_statements(config) -> list[str]:
    """``database.initial.statements`` split as Debezium's JdbcConnection.parseSqlStatementString does.

    ``;`` ends a statement and ``;;`` is a literal semicolon; statements are trimmed, empty ones dropped.
    """
    text = config.get(DATABASE_INITIAL_STATEMENTS) or ""
    out: list[str] = []
    current: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c != ";":
            current.append(c)
        elif i + 1 < n and text[i + 1] == ";":
            current.append(";")
            i += 1
        elif i + 1 < n:
            if stmt := "".join(current).strip():
                out.append(stmt)
            current = []
        i += 1
    if stmt := "".join(current).strip():
        out.append(stmt)
    return out


def query_options(config) -> str:
    """The session options of a query (not replication) connection: ``database.query.timeout.ms`` added."""
    return f"{SESSION_OPTIONS} -c statement_timeout={int(config.get(QUERY_TIMEOUT_MS))}"


def tls_params(config) -> dict[str, str]:
    """libpq's TLS parameters from ``database.ssl*`` (the key's passphrase included; never log them)."""
    params = {}
    for field, name in ((SSLCERT, "sslcert"), (SSLKEY, "sslkey"), (SSLROOTCERT, "sslrootcert")):
        if config.get(field):
            params[name] = config.get(field)
    if config.get(SSLKEY) or config.get(SSLCERT):
        # Any passphrase, even a wrong one, stops OpenSSL from asking for one on the terminal (a hang);
        # an encrypted key without database.sslpassword then fails as a key that does not decrypt.
        params["sslpassword"] = config.get(SSLPASSWORD) or "-"
    return params


def tls_file_problems(config) -> list[str]:
    """``database.sslcert``/``sslkey``/``sslrootcert`` naming files this process cannot read.

    libpq silently sends no certificate when ``sslcert`` names no file, and the server's refusal then
    does not say why: a missing file is refused at start instead, naming the property.
    """
    problems = []
    for field in (SSLCERT, SSLKEY, SSLROOTCERT):
        path = config.get(field)
        if path and field is SSLROOTCERT and path == "system":
            continue  # libpq: the system's trusted roots
        if path and not (os.path.isfile(path) and os.access(path, os.R_OK)):
            why = "does not exist" if not os.path.exists(path) else "is not a readable file"
            problems.append(f"{field.name}: {path!r} {why}")
    return problems


#: libpq's and the server's TLS refusals (their reason text), and the properties that fix each.
TLS_ERRORS = (
    (re.compile(r"requires a valid client certificate|certificate authentication failed|"
                r"certificate present, but not private key|tlsv1 alert unknown ca|sslv3 alert certificate"),
     "database.sslcert and database.sslkey (a client certificate the server accepts)"),
    (re.compile(r"private key file .*(bad decrypt|could not load|has group or world access)|"
                r"could not load private key|bad decrypt"),
     "database.sslkey and database.sslpassword"),
    (re.compile(r"root certificate file|certificate verify failed"), "database.sslrootcert and database.sslmode"),
    (re.compile(r"server certificate for .* does not match"),
     "database.hostname (verify-full checks it against the server's certificate) and database.sslmode"),
    (re.compile(r"does not support SSL|SSL was required|(no pg_hba\.conf entry|pg_hba\.conf rejects connection).*no encryption"),
     "database.sslmode and the server's SSL setup"),
)


def host_list(hostname: str, port: int) -> tuple[list[str], list[str]]:
    """libpq's host and port lists from ``host[:port],host[:port],...`` (a host without one gets ``port``).

    libpq tries the hosts in order on every connect, so a lost node is passed over on reconnect.
    """
    hosts, ports = [], []
    for entry in hostname.split(","):
        entry = entry.strip()
        host, sep, own = entry.rpartition(":")
        if sep and own.isdigit() and host and ":" not in host and not host.startswith("/"):
            hosts.append(host)
            ports.append(own)
        else:
            hosts.append(entry)
            ports.append(str(port))
    return hosts, ports


def server_address(config) -> str:
    """``host:port`` of the configured server(s), for error messages."""
    hosts, ports = host_list(config.get(HOSTNAME), config.get(PORT))
    return ",".join(f"{h}:{p}" for h, p in zip(hosts, ports))
