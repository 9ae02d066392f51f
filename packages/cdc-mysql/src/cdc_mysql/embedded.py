"""A throwaway MariaDB server run from the local binaries, for tests, benchmarks and experiments.

``EmbeddedMariaDB`` runs ``mariadb-install-db`` into a temporary directory and starts ``mariadbd``
on a free TCP port of 127.0.0.1 (plus a Unix socket in the same directory) with the binlog in
ROW format, full row images and full row metadata, and removes everything again on ``stop()``.
The root user has no password. When the current process is root, the server runs as the
``mysql`` OS user (the Debian package creates it). It never touches the machine's own service.
"""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Any

import pymysql

from cdc_core.server_watchdog import ServerWatchdog

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


class EmbeddedMariaDBError(RuntimeError):
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


def _free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port on ``host`` that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


_LIVE: set[EmbeddedMariaDB] = set()


@atexit.register
def _stop_leftovers() -> None:
    """Stop servers a run forgot to stop, so no mariadbd outlives the interpreter."""
    for server in list(_LIVE):
        try:
            server.stop()
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass


class EmbeddedMariaDB:
    """A throwaway MariaDB server on 127.0.0.1 with a password-less root user and a ROW binlog."""

    host = "127.0.0.1"
    user = "root"
    password = ""

    def __init__(self, settings: dict[str, Any] | None = None, *, port: int | None = None,
                 startup_timeout: float = 60.0, shutdown_timeout: float = 30.0) -> None:
        """Describe a server; nothing happens until ``start()``. ``settings`` override ``DEFAULT_SETTINGS``."""
        self._settings = dict(DEFAULT_SETTINGS)
        for key, value in (settings or {}).items():
            key = key.replace("_", "-")
            if value is None:
                self._settings.pop(key, None)
            elif isinstance(value, bool):
                self._settings[key] = "ON" if value else "OFF"
            else:
                self._settings[key] = str(value)
        self._fixed_port = port
        self.port: int = port or 0
        self.startup_timeout = startup_timeout
        self.shutdown_timeout = shutdown_timeout
        self._base_dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._watchdog: ServerWatchdog | None = None
        self._run_as: pwd.struct_passwd | None = None

    # ----------------------------------------------------------------------------- paths

    @property
    def base_dir(self) -> Path:
        """The temporary directory holding data, socket and log."""
        if self._base_dir is None:
            raise EmbeddedMariaDBError("the embedded server has not been started yet")
        return self._base_dir

    @property
    def data_dir(self) -> Path:
        """The server's data directory (binlogs live here too)."""
        return self.base_dir / "data"

    @property
    def socket_path(self) -> Path:
        """The server's Unix socket."""
        return self.base_dir / "mariadb.sock"

    @property
    def log_path(self) -> Path:
        """The server's error log."""
        return self.base_dir / "mariadb.log"

    @property
    def pid(self) -> int | None:
        """The server's process id, or None when not running."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    @property
    def running(self) -> bool:
        """Tell whether the server process is alive."""
        return self.pid is not None

    # ----------------------------------------------------------------------------- lifecycle

    def start(self) -> EmbeddedMariaDB:
        """Create the data directory if needed, start the server and wait until it accepts connections."""
        if self.running:
            return self
        if self._base_dir is None:
            self._prepare()
        if self._watchdog is None:  # stops the server if this process is killed
            self._watchdog = ServerWatchdog(self.base_dir / "mariadb.pid", self.base_dir,
                                            grace_s=self.shutdown_timeout)
        attempts = 1 if self._fixed_port else 3
        for attempt in range(attempts):
            try:
                self._launch()
                break
            except EmbeddedMariaDBError as exc:
                if attempt + 1 < attempts and "Address already in use" in str(exc):
                    self.port = _free_port(self.host)
                    continue
                raise
        _LIVE.add(self)
        return self

    def stop(self) -> None:
        """Shut the server down (SIGTERM, escalating if it hangs) and remove its temporary files."""
        self._shutdown()
        _LIVE.discard(self)
        if self._base_dir is not None:
            shutil.rmtree(self._base_dir, ignore_errors=True)
            self._base_dir = None
        if self._watchdog is not None:
            self._watchdog.release()
            self._watchdog = None

    def kill(self) -> None:
        """SIGKILL the server, as a crash would."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        proc.kill()
        proc.wait()

    def restart(self, settings: dict[str, Any] | None = None) -> None:
        """Stop the server if it runs and start it again on the same port (with changed settings, if given)."""
        self._shutdown()
        for key, value in (settings or {}).items():
            key = key.replace("_", "-")
            if value is None:
                self._settings.pop(key, None)
            else:
                self._settings[key] = str(value)
        self.start()

    def __enter__(self) -> EmbeddedMariaDB:
        """Start the server."""
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        """Stop the server and remove its temporary files."""
        self.stop()

    def __repr__(self) -> str:
        """Show where the server listens and whether it runs."""
        return f"<EmbeddedMariaDB {self.host}:{self.port} {'running' if self.running else 'stopped'}>"

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

    def log_tail(self, n: int = 40) -> str:
        """Return the last ``n`` lines of the server log."""
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as fh:
                return "".join(deque(fh, maxlen=n))
        except (OSError, EmbeddedMariaDBError):
            return ""

    # ----------------------------------------------------------------------------- internals

    def _prepare(self) -> None:
        """Create the temporary directory and install the system tables into it."""
        _, install_db = find_mariadb_binaries()
        self._run_as = self._server_account()
        self._base_dir = Path(tempfile.mkdtemp(prefix="cdc-mariadb-"))
        try:
            self.data_dir.mkdir()
            if self._run_as is not None:
                os.chmod(self._base_dir, 0o755)
                for path in (self._base_dir, self.data_dir):
                    os.chown(path, self._run_as.pw_uid, self._run_as.pw_gid)
            cmd = [str(install_db), "--no-defaults", f"--datadir={self.data_dir}", "--auth-root-authentication-method=normal",
                   "--skip-test-db", "--skip-name-resolve"]
            if self._run_as is not None:
                cmd.append(f"--user={self._run_as.pw_name}")
            try:
                result = subprocess.run(cmd, capture_output=True, text=True, timeout=180, **self._popen_kwargs())
            except (OSError, subprocess.SubprocessError) as exc:
                raise EmbeddedMariaDBError(f"cannot run {install_db}: {exc}") from exc
            if result.returncode != 0:
                raise EmbeddedMariaDBError(f"mariadb-install-db into {self.data_dir} failed (exit code {result.returncode}):\n"
                                           f"{result.stdout}{result.stderr}")
            if not self.port:
                self.port = _free_port(self.host)
        except BaseException:
            shutil.rmtree(self._base_dir, ignore_errors=True)
            self._base_dir = None
            raise

    def _server_account(self) -> pwd.struct_passwd | None:
        """The OS account to run the server as when we are root, else None."""
        if os.geteuid() != 0:
            return None
        try:
            return pwd.getpwnam(SERVER_ACCOUNT)
        except KeyError:
            raise EmbeddedMariaDBError(
                f"running as root, but the OS user {SERVER_ACCOUNT!r} that runs MariaDB does not exist; create it "
                f"(`useradd --system {SERVER_ACCOUNT}`, or {_INSTALL_HINT}) or run as a non-root user"
            ) from None

    def _popen_kwargs(self) -> dict[str, Any]:
        """Keyword arguments that run a child in the temporary directory with a clean locale."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MYSQL", "MARIADB"))}
        env["LC_ALL"] = "C"
        return {"env": env, "cwd": str(self.base_dir)}

    def _command(self) -> list[str]:
        """The ``mariadbd`` command line."""
        mariadbd, _ = find_mariadb_binaries()
        cmd = [str(mariadbd), "--no-defaults", f"--datadir={self.data_dir}", f"--port={self.port}",
               f"--bind-address={self.host}", f"--socket={self.socket_path}", f"--pid-file={self.base_dir / 'mariadb.pid'}",
               f"--log-error={self.log_path}", f"--tmpdir={self.base_dir}"]
        if self._run_as is not None:
            cmd.append(f"--user={self._run_as.pw_name}")
        cmd += [f"--{key}={value}" for key, value in self._settings.items()]
        return cmd

    def _launch(self) -> None:
        """Start ``mariadbd`` and wait until it accepts connections."""
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        try:
            self._proc = subprocess.Popen(self._command(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL, start_new_session=True, **self._popen_kwargs())
        except OSError as exc:
            raise EmbeddedMariaDBError(f"cannot start mariadbd: {exc}") from exc
        deadline = time.monotonic() + self.startup_timeout
        delay = 0.02
        while True:
            code = self._proc.poll()
            if code is not None:
                self._proc = None
                raise EmbeddedMariaDBError(f"MariaDB on {self.host}:{self.port} exited during start-up (exit code {code}); "
                                           f"server log:\n{self._log_since(offset)}")
            try:
                pymysql.connect(**self.conninfo(connect_timeout=2)).close()
                return
            except pymysql.err.OperationalError:
                pass
            if time.monotonic() > deadline:
                self._shutdown()
                raise EmbeddedMariaDBError(f"MariaDB on {self.host}:{self.port} did not accept connections within "
                                           f"{self.startup_timeout:.0f}s; server log tail:\n{self.log_tail(30)}")
            time.sleep(delay)
            delay = min(delay * 2, 0.2)

    def _log_since(self, offset: int) -> str:
        """The log written since byte ``offset`` (at most the last 4 KiB)."""
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(max(offset, fh.seek(0, os.SEEK_END) - 4096))
                return fh.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def _shutdown(self) -> None:
        """Stop the server: SIGTERM, then SIGKILL."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=self.shutdown_timeout)
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
