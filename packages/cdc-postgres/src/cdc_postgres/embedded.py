"""A throwaway PostgreSQL server run from the local binaries, for tests and local experiments.

``EmbeddedPostgres`` runs ``initdb`` into a temporary directory, starts ``postgres`` on a free
TCP port of 127.0.0.1 with logical decoding enabled and trust authentication, and removes
everything again on ``stop()``. When the current process is root, the server runs as the
``postgres`` OS user (PostgreSQL refuses to run as root). The process management (ports, service
account, watchdog, leftovers, kept logs) is ``cdc_core.throwaway_server``'s; this module says only
what differs for PostgreSQL.
"""

from __future__ import annotations

import glob
import grp
import os
import shutil
import signal
import stat
import subprocess
from pathlib import Path
from typing import Any

import psycopg
from psycopg import pq, sql
from psycopg.conninfo import make_conninfo

from cdc_core.throwaway_server import ThrowawayServer, ThrowawayServerError

__all__ = ["EmbeddedPostgres", "EmbeddedPostgresError", "find_pg_bindir"]

SERVER_USER = "postgres"
"""The database superuser name and, when running as root, the OS user that runs the server."""

DEFAULT_SETTINGS: dict[str, str] = {
    "wal_level": "logical",
    "max_replication_slots": "20",
    "max_wal_senders": "20",
    "fsync": "off",
    "full_page_writes": "off",
    "shared_buffers": "128MB",
    "max_connections": "100",
}
"""Server settings applied unless overridden; ``synchronous_commit`` is deliberately left on."""

PG_HBA = """\
# Written by cdc_postgres.embedded: trust everything local, including replication.
local   all             all                     trust
host    all             all     127.0.0.1/32    trust
local   replication     all                     trust
host    replication     all     127.0.0.1/32    trust
"""

_INSTALL_HINT = "install the server binaries, e.g. `apt-get install postgresql`"


class EmbeddedPostgresError(ThrowawayServerError):
    """Raised when a throwaway PostgreSQL server cannot be set up, started or stopped."""


def _has_server_binaries(bindir: Path) -> bool:
    """Tell whether ``bindir`` holds both ``initdb`` and ``postgres``."""
    return (bindir / "initdb").is_file() and (bindir / "postgres").is_file()


def _version_key(path: str) -> tuple[int, ...]:
    """Sort key for ``/usr/lib/postgresql/<version>/bin`` paths, newest last."""
    version = Path(path).parent.name
    try:
        return tuple(int(part) for part in version.split("."))
    except ValueError:
        return (-1,)


def find_pg_bindir() -> Path:
    """Locate the directory holding ``initdb`` and ``postgres``.

    Tries ``pg_config --bindir``, then the newest ``/usr/lib/postgresql/*/bin``, then ``PATH``.
    """
    tried: list[str] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, timeout=10, check=True
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            out = ""
        if out:
            tried.append(f"{out} (from pg_config --bindir)")
            if _has_server_binaries(Path(out)):
                return Path(out)
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True):
        tried.append(candidate)
        if _has_server_binaries(Path(candidate)):
            return Path(candidate)
    initdb = shutil.which("initdb")
    if initdb and _has_server_binaries(Path(initdb).parent):
        return Path(initdb).parent
    tried.append("PATH")
    raise EmbeddedPostgresError(
        "cannot find the PostgreSQL server binaries `initdb` and `postgres` (looked in: "
        + ", ".join(tried)
        + f"); {_INSTALL_HINT}"
    )


class EmbeddedPostgres(ThrowawayServer):
    """A throwaway PostgreSQL server listening on 127.0.0.1 with trust authentication."""

    product = "PostgreSQL"
    error = EmbeddedPostgresError
    service_account = SERVER_USER
    install_hint = _INSTALL_HINT
    temp_prefix = "cdc-pg-"
    log_name = "postgres.log"
    # Fast shutdown, then immediate shutdown, then SIGKILL.
    stop_signals = ((signal.SIGINT, None), (signal.SIGQUIT, 10.0))
    port_taken_markers = ("could not bind", "Address already in use")
    env_drop_prefixes = ("PG",)  # libpq/server variables would redirect initdb and postgres
    default_settings = DEFAULT_SETTINGS
    # TLS: ssl=on with these three makes a server that can ask clients for certificates (``hba``'s ``cert``).
    file_settings = ("ssl_cert_file", "ssl_key_file", "ssl_ca_file")

    user = SERVER_USER

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        port: int | None = None,
        settings: dict[str, Any] | None = None,
        *,
        bindir: str | os.PathLike[str] | None = None,
        startup_timeout: float = 60.0,
        shutdown_timeout: float = 30.0,
        hba: str = "",
    ) -> None:
        """Describe a server; nothing happens until ``start()``.

        ``data_dir`` None means a fresh temporary cluster removed on ``stop()``; an existing
        cluster directory is reused as is. ``settings`` override ``DEFAULT_SETTINGS`` (a value of
        None drops a default). ``bindir`` skips the binary search. ``hba`` lines go before the default
        trust rules of a new cluster's pg_hba.conf (the first matching line wins), e.g. a ``hostssl ... cert``
        rule for one user.
        """
        super().__init__(settings, port=port, startup_timeout=startup_timeout, shutdown_timeout=shutdown_timeout)
        self._bindir = Path(bindir) if bindir is not None else None
        self._given_data_dir = Path(data_dir).resolve() if data_dir is not None else None
        self._hba = hba
        self._data_dir: Path | None = None

    # ----------------------------------------------------------------------------- properties

    @property
    def bindir(self) -> Path:
        """The directory holding the server binaries (searched on first use)."""
        if self._bindir is None:
            self._bindir = find_pg_bindir()
        return self._bindir

    @property
    def data_dir(self) -> Path:
        """The cluster's data directory (valid after ``start()``)."""
        if self._data_dir is None:
            raise EmbeddedPostgresError("the embedded server has not been started yet")
        return self._data_dir

    @property
    def socket_dir(self) -> Path:
        """The directory holding the server's Unix socket."""
        return self.base_dir / "sock"

    @property
    def pid_file(self) -> Path:
        """The postmaster's pid file."""
        return self.data_dir / "postmaster.pid"

    # ----------------------------------------------------------------------------- client side

    def conninfo(self, dbname: str = "postgres", **extra: Any) -> str:
        """Return a libpq keyword/value connection string for ``dbname`` on this server."""
        if not self.port:
            raise EmbeddedPostgresError("the server has no port yet: call start() first")
        return make_conninfo(
            "", host=self.host, port=str(self.port), user=self.user, dbname=dbname, **extra
        )

    def connect(self, dbname: str = "postgres", **kwargs: Any) -> psycopg.Connection[Any]:
        """Open an autocommit psycopg connection to ``dbname`` (caller closes it)."""
        kwargs.setdefault("autocommit", True)
        return psycopg.connect(self.conninfo(dbname), **kwargs)

    def execute(
        self, query: str | sql.Composable, dbname: str = "postgres", params: Any = None
    ) -> list[tuple[Any, ...]] | None:
        """Run one statement in autocommit mode; return its rows, or None if it returns none."""
        with self.connect(dbname) as conn:
            cur = conn.execute(query, params)  # type: ignore[arg-type]
            return cur.fetchall() if cur.description is not None else None

    def create_database(self, name: str) -> None:
        """Create database ``name`` (owned by the superuser)."""
        self.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))

    # ----------------------------------------------------------------------------- the differences

    def _initialize(self) -> None:
        """Create the socket directory and, unless an existing cluster is given, the cluster."""
        bindir = self.bindir
        (self.base_dir / "sock").mkdir()
        self._chown_tree(self.base_dir / "sock")
        self._data_dir = self._given_data_dir or self.base_dir / "data"
        if self._run_as is not None and self._given_data_dir is not None:
            self._check_reachable(self._given_data_dir)
            if not self._given_data_dir.exists():
                self._given_data_dir.mkdir(parents=True, mode=0o700)
            self._chown_tree(self._given_data_dir)
        if not (self._data_dir / "PG_VERSION").exists():
            self._initdb(bindir)

    def _after_remove(self) -> None:
        """A temporary cluster is gone with the directory; a given one stays."""
        if self._given_data_dir is None:
            self._data_dir = None

    def _check_reachable(self, path: Path) -> None:
        """Fail clearly if the server account cannot enter every directory above ``path``."""
        assert self._run_as is not None
        uid, gid = self._run_as.pw_uid, self._run_as.pw_gid
        groups = {gid} | {g.gr_gid for g in grp.getgrall() if self._run_as.pw_name in g.gr_mem}
        for parent in reversed(path.parents):
            try:
                st = parent.stat()
            except OSError:
                continue
            if st.st_uid == uid:
                ok = bool(st.st_mode & stat.S_IXUSR)
            elif st.st_gid in groups:
                ok = bool(st.st_mode & stat.S_IXGRP)
            else:
                ok = bool(st.st_mode & stat.S_IXOTH)
            if not ok:
                raise EmbeddedPostgresError(
                    f"the server runs as OS user {self._run_as.pw_name!r}, which cannot enter "
                    f"{parent} (mode {stat.S_IMODE(st.st_mode):04o}) to reach the data directory "
                    f"{path}; choose a data_dir below directories it can enter, or `chmod o+x "
                    f"{parent}`"
                )

    def _initdb(self, bindir: Path) -> None:
        """Run ``initdb`` for a fast, trust-authenticated UTF-8 cluster and write pg_hba.conf."""
        cmd = [
            str(bindir / "initdb"),
            "-D", str(self.data_dir),
            "-A", "trust",
            "-E", "UTF8",
            "--no-locale",
            "-U", SERVER_USER,
            "--no-sync",
        ]  # fmt: skip
        self._run_tool(cmd, f"initdb into {self.data_dir}", timeout=120)
        hba = self.data_dir / "pg_hba.conf"
        hba.write_text((self._hba.rstrip("\n") + "\n" if self._hba else "") + PG_HBA)
        if self._run_as is not None:
            os.chown(hba, self._run_as.pw_uid, self._run_as.pw_gid)

    def _command(self) -> list[str]:
        """The postmaster command line, with all settings as ``-c`` options."""
        settings = dict(self._settings)
        settings.update(
            port=str(self.port),
            listen_addresses=self.host,
            unix_socket_directories=str(self.socket_dir),
        )
        cmd = [str(self.bindir / "postgres"), "-D", str(self.data_dir)]
        for key, value in settings.items():
            cmd += ["-c", f"{key}={value}"]
        return cmd

    def _ping(self) -> bool:
        """Ask libpq whether the server accepts connections."""
        info = make_conninfo("", host=self.host, port=str(self.port), user=self.user, dbname="postgres",
                             connect_timeout="2").encode()
        return pq.PGconn.ping(info) == pq.Ping.OK
