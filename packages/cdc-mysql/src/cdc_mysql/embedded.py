"""A throwaway MariaDB server run from the local binaries, for tests, benchmarks and experiments.

``EmbeddedMariaDB`` runs ``mariadb-install-db`` into a temporary directory and starts ``mariadbd``
on a free TCP port of 127.0.0.1 (plus a Unix socket in the same directory) with the binlog in
ROW format, full row images and full row metadata, and removes everything again on ``stop()``.
The root user has no password. When the current process is root, the server runs as the
``mysql`` OS user (the Debian package creates it). It never touches the machine's own service. The process management (ports, service account,
watchdog, leftovers, kept logs) is ``cdc_core.throwaway_server``'s; this module says only what
differs for MariaDB.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pymysql

from cdc_core.throwaway_server import ThrowawayServer, ThrowawayServerError

__all__ = ["EmbeddedMariaDB", "EmbeddedMariaDBError", "find_mariadb_binaries"]

SERVER_ACCOUNT = "mysql"
"""The OS user that runs the server when we are root."""

DEFAULT_SETTINGS: dict[str, str] = {
    "log-bin": "mariadb-bin",
    "binlog-format": "ROW",
    "binlog-row-image": "FULL",
    "binlog-row-metadata": "FULL",
    "binlog-annotate-row-events": "ON",
    "server-id": "1",
    "innodb-flush-log-at-trx-commit": "2",
    "sync-binlog": "0",
    "innodb-buffer-pool-size": "64M",
    "innodb-log-file-size": "48M",
    "innodb-doublewrite": "0",
    "max-connections": "200",
    "character-set-server": "utf8mb4",
    "collation-server": "utf8mb4_general_ci",
    "skip-name-resolve": "ON",
    "explicit-defaults-for-timestamp": "ON",
    "max-allowed-packet": "64M",
}
"""Server settings applied unless overridden (a value of None drops one)."""

_INSTALL_HINT = "install the server binaries, e.g. `apt-get install mariadb-server`"


class EmbeddedMariaDBError(ThrowawayServerError):
    """Raised when a throwaway MariaDB server cannot be set up, started or stopped."""


def find_mariadb_binaries() -> tuple[Path, Path]:
    """Locate ``mariadbd`` and ``mariadb-install-db`` (PATH, then /usr/sbin and /usr/bin)."""
    found = []
    for name, extra in (("mariadbd", "/usr/sbin/mariadbd"), ("mariadb-install-db", "/usr/bin/mariadb-install-db")):
        path = shutil.which(name) or (extra if os.path.exists(extra) else None)
        if path is None:
            raise EmbeddedMariaDBError(f"cannot find the MariaDB binary `{name}` (looked in PATH and {extra}); {_INSTALL_HINT}")
        found.append(Path(path))
    return found[0], found[1]


class EmbeddedMariaDB(ThrowawayServer):
    """A throwaway MariaDB server on 127.0.0.1 with a password-less root user and a ROW binlog."""

    product = "MariaDB"
    error = EmbeddedMariaDBError
    service_account = SERVER_ACCOUNT
    install_hint = _INSTALL_HINT
    temp_prefix = "cdc-mariadb-"
    log_name = "mariadb.log"
    log_to_stdout = False  # --log-error
    env_drop_prefixes = ("MYSQL", "MARIADB")
    switch_user = False  # mariadbd (and install-db) switch to --user themselves
    setting_on = "ON"
    setting_off = "OFF"
    default_settings = DEFAULT_SETTINGS
    # TLS: these three make a server that can check client certificates (users created ``REQUIRE X509``).
    file_settings = ("ssl_cert", "ssl_key", "ssl_ca")

    user = "root"
    password = ""

    # ----------------------------------------------------------------------------- paths

    @property
    def data_dir(self) -> Path:
        """The server's data directory (binlogs live here too)."""
        return self.base_dir / "data"

    @property
    def socket_path(self) -> Path:
        """The server's Unix socket."""
        return self.base_dir / "mariadb.sock"

    @property
    def pid_file(self) -> Path:
        """The server's pid file."""
        return self.base_dir / "mariadb.pid"

    # ----------------------------------------------------------------------------- client side

    def conninfo(self, database: str | None = None, **extra: Any) -> dict[str, Any]:
        """PyMySQL ``connect`` keyword arguments for this server (TCP, root, no password)."""
        if not self.port:
            raise EmbeddedMariaDBError("the server has no port yet: call start() first")
        info: dict[str, Any] = {"host": self.host, "port": self.port, "user": self.user, "password": self.password,
                                "charset": "utf8mb4", "autocommit": True}
        if database:
            info["database"] = database
        info.update(extra)
        return info

    def connect(self, database: str | None = None, **extra: Any) -> pymysql.connections.Connection:
        """Open an autocommit PyMySQL connection (caller closes it)."""
        return pymysql.connect(**self.conninfo(database, **extra))

    def execute(self, statements: str | list[str], database: str | None = None, params: Any = None) -> list[tuple[Any, ...]] | None:
        """Run one statement (or several, in order) in autocommit mode; return the last one's rows, if any."""
        if isinstance(statements, str):
            statements = [statements]
        with self.connect(database) as conn, conn.cursor() as cur:
            rows = None
            for statement in statements:
                cur.execute(statement, params)
                rows = list(cur.fetchall()) if cur.description is not None else None
            return rows

    def create_database(self, name: str) -> None:
        """Create database ``name``."""
        self.execute(f"CREATE DATABASE `{name}`")

    # ----------------------------------------------------------------------------- the differences

    def _setting_key(self, key: str) -> str:
        """MariaDB options are spelled with dashes."""
        return key.replace("_", "-")

    def _initialize(self) -> None:
        """Install the system tables into a fresh data directory."""
        _, install_db = find_mariadb_binaries()
        self.data_dir.mkdir()
        self._chown_tree(self.data_dir)
        cmd = [str(install_db), "--no-defaults", f"--datadir={self.data_dir}", "--auth-root-authentication-method=normal",
               "--skip-test-db", "--skip-name-resolve"]
        if self._run_as is not None:
            cmd.append(f"--user={self._run_as.pw_name}")
        self._run_tool(cmd, f"mariadb-install-db into {self.data_dir}")

    def _command(self) -> list[str]:
        """The ``mariadbd`` command line."""
        mariadbd, _ = find_mariadb_binaries()
        cmd = [str(mariadbd), "--no-defaults", f"--datadir={self.data_dir}", f"--port={self.port}",
               f"--bind-address={self.host}", f"--socket={self.socket_path}", f"--pid-file={self.pid_file}",
               f"--log-error={self.log_path}", f"--tmpdir={self.base_dir}"]
        if self._run_as is not None:
            cmd.append(f"--user={self._run_as.pw_name}")
        cmd += [f"--{key}={value}" for key, value in self._settings.items()]
        return cmd

    def _ping(self) -> bool:
        """Try a connection."""
        try:
            pymysql.connect(**self.conninfo(connect_timeout=2)).close()
            return True
        except pymysql.err.OperationalError:
            return False
