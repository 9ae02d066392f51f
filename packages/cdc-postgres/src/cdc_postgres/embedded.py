"""A throwaway PostgreSQL server run from the local binaries, for tests and local experiments.

``EmbeddedPostgres`` runs ``initdb`` into a temporary directory, starts ``postgres`` on a free
TCP port of 127.0.0.1 with logical decoding enabled and trust authentication, and removes
everything again on ``stop()``. When the current process is root, the server runs as the
``postgres`` OS user (PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import atexit
import glob
import grp
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Any

import psycopg
from psycopg import pq, sql
from psycopg.conninfo import make_conninfo

from cdc_core.server_watchdog import ServerWatchdog

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


class EmbeddedPostgresError(RuntimeError):
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


def _free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port on ``host`` that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _clean_env() -> dict[str, str]:
    """The environment for server binaries: ours minus libpq/server ``PG*`` variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["LC_ALL"] = "C"
    env.pop("LANG", None)
    return env


def _child_pids(pid: int) -> list[int]:
    """List the direct children of ``pid`` (Linux ``/proc``; empty elsewhere)."""
    children: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return children
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                raw = fh.read()
        except OSError:
            continue
        # Field 4 is the parent pid; field 2 (the command name) may hold spaces: split after ')'.
        fields = raw[raw.rfind(b")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            children.append(int(entry))
    return children


def _pid_alive(pid: int) -> bool:
    """Tell whether a process with ``pid`` still exists (and is not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
        state_at = raw.rfind(b")") + 2
        return raw[state_at : state_at + 1] != b"Z"
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


_LIVE: set[EmbeddedPostgres] = set()  # started servers, stopped at exit if still running


@atexit.register
def _stop_leftovers() -> None:
    """Stop servers a test run forgot to stop, so no postmaster outlives the interpreter."""
    for server in list(_LIVE):
        try:
            server.stop()
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass


class EmbeddedPostgres:
    """A throwaway PostgreSQL server listening on 127.0.0.1 with trust authentication."""

    host = "127.0.0.1"
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
    ) -> None:
        """Describe a server; nothing happens until ``start()``.

        ``data_dir`` None means a fresh temporary cluster removed on ``stop()``; an existing
        cluster directory is reused as is. ``settings`` override ``DEFAULT_SETTINGS`` (a value of
        None drops a default). ``bindir`` skips the binary search.
        """
        self._bindir = Path(bindir) if bindir is not None else None
        self._given_data_dir = Path(data_dir).resolve() if data_dir is not None else None
        self._fixed_port = port
        self.port: int = port or 0
        self._settings = dict(DEFAULT_SETTINGS)
        for key, value in (settings or {}).items():
            if value is None:
                self._settings.pop(key, None)
            elif isinstance(value, bool):
                self._settings[key] = "on" if value else "off"
            else:
                self._settings[key] = str(value)
        self.startup_timeout = startup_timeout
        self.shutdown_timeout = shutdown_timeout
        self._base_dir: Path | None = None
        self._data_dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._watchdog: ServerWatchdog | None = None
        self._log_file: Any = None
        self._run_as: pwd.struct_passwd | None = None

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
        return self._runtime_dir() / "sock"

    @property
    def log_path(self) -> Path:
        """The server log file (server stdout and stderr)."""
        return self._runtime_dir() / "postgres.log"

    @property
    def pid(self) -> int | None:
        """The postmaster's process id, or None when not running."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    @property
    def running(self) -> bool:
        """Tell whether the postmaster process is alive."""
        return self.pid is not None

    def _runtime_dir(self) -> Path:
        """The temporary directory holding socket, log and (by default) the data directory."""
        if self._base_dir is None:
            raise EmbeddedPostgresError("the embedded server has not been started yet")
        return self._base_dir

    # ----------------------------------------------------------------------------- lifecycle

    def start(self) -> EmbeddedPostgres:
        """Create the cluster if needed, start the server and wait until it accepts connections."""
        if self.running:
            return self
        if self._base_dir is None:
            self._prepare()
        if self._watchdog is None:  # stops the server (fast shutdown) if this process is killed
            self._watchdog = ServerWatchdog(Path(self.data_dir) / "postmaster.pid", self._base_dir,
                                            stop_signal=signal.SIGINT, grace_s=self.shutdown_timeout)
        attempts = 1 if self._fixed_port else 3
        for attempt in range(attempts):
            try:
                self._launch()
                break
            except EmbeddedPostgresError as exc:
                port_taken = "could not bind" in str(exc) or "Address already in use" in str(exc)
                if attempt + 1 < attempts and port_taken:
                    self.port = _free_port(self.host)
                    continue
                raise
        _LIVE.add(self)
        return self

    def stop(self) -> None:
        """Shut the server down (fast mode, escalating if it hangs) and remove temporary files."""
        self._shutdown()
        _LIVE.discard(self)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self._base_dir is not None:
            shutil.rmtree(self._base_dir, ignore_errors=True)
            self._base_dir = None
            if self._given_data_dir is None:
                self._data_dir = None
        if self._watchdog is not None:
            self._watchdog.release()
            self._watchdog = None

    def kill(self) -> None:
        """SIGKILL the postmaster and its child processes, as a crash would."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        children = _child_pids(proc.pid)
        proc.kill()
        proc.wait()
        for child in children:
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10.0
        while any(_pid_alive(c) for c in children) and time.monotonic() < deadline:
            time.sleep(0.01)

    def restart(self) -> None:
        """Stop the server if it runs (fast shutdown) and start it again on the same port."""
        self._shutdown()
        self.start()

    def __enter__(self) -> EmbeddedPostgres:
        """Start the server."""
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        """Stop the server and remove its temporary files."""
        self.stop()

    def __repr__(self) -> str:
        """Show where the server listens and whether it runs."""
        state = "running" if self.running else "stopped"
        return f"<EmbeddedPostgres {self.host}:{self.port} {state}>"

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

    def log_tail(self, n: int = 40) -> str:
        """Return the last ``n`` lines of the server log."""
        try:
            with open(self.log_path, "r", encoding="utf-8", errors="replace") as fh:
                return "".join(deque(fh, maxlen=n))
        except (OSError, EmbeddedPostgresError):
            return ""

    # ----------------------------------------------------------------------------- internals

    def _prepare(self) -> None:
        """Create the temporary directory (and the cluster unless an existing one is given)."""
        bindir = self.bindir
        self._run_as = self._server_account()
        self._base_dir = Path(tempfile.mkdtemp(prefix="cdc-pg-"))
        try:
            (self._base_dir / "sock").mkdir()
            self._data_dir = self._given_data_dir or self._base_dir / "data"
            if self._run_as is not None:
                self._chown_tree(self._base_dir)
                if self._given_data_dir is not None:
                    self._check_reachable(self._given_data_dir)
                if self._given_data_dir is not None and self._given_data_dir.exists():
                    self._chown_tree(self._given_data_dir)
                elif self._given_data_dir is not None:
                    self._given_data_dir.mkdir(parents=True, mode=0o700)
                    self._chown_tree(self._given_data_dir)
            if not (self._data_dir / "PG_VERSION").exists():
                self._initdb(bindir)
            if not self.port:
                self.port = _free_port(self.host)
        except BaseException:
            shutil.rmtree(self._base_dir, ignore_errors=True)
            self._base_dir = None
            raise

    def _server_account(self) -> pwd.struct_passwd | None:
        """Return the OS account to run the server as when we are root, else None."""
        if os.geteuid() != 0:
            return None
        try:
            return pwd.getpwnam(SERVER_USER)
        except KeyError:
            raise EmbeddedPostgresError(
                f"running as root, but PostgreSQL refuses to run as root and the OS user "
                f"{SERVER_USER!r} does not exist; create it (`useradd --system {SERVER_USER}`, "
                f"or {_INSTALL_HINT}) or run as a non-root user"
            ) from None

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

    def _chown_tree(self, path: Path) -> None:
        """Give ``path`` and everything below it to the server account."""
        assert self._run_as is not None
        uid, gid = self._run_as.pw_uid, self._run_as.pw_gid
        os.chown(path, uid, gid)
        for root, dirs, files in os.walk(path):
            for name in dirs + files:
                os.chown(os.path.join(root, name), uid, gid, follow_symlinks=False)

    def _popen_kwargs(self) -> dict[str, Any]:
        """Keyword arguments that make a child run as the server account in a clean env."""
        kwargs: dict[str, Any] = {"env": _clean_env(), "cwd": str(self._runtime_dir())}
        if self._run_as is not None:
            kwargs.update(user=self._run_as.pw_uid, group=self._run_as.pw_gid, extra_groups=[])
            kwargs["env"]["HOME"] = self._run_as.pw_dir
            kwargs["env"]["USER"] = kwargs["env"]["LOGNAME"] = self._run_as.pw_name
        return kwargs

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
        try:
            result = subprocess.run(
                cmd, capture_output=True, text=True, timeout=120, **self._popen_kwargs()
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise EmbeddedPostgresError(f"cannot run {cmd[0]}: {exc}") from exc
        if result.returncode != 0:
            raise EmbeddedPostgresError(
                f"initdb into {self.data_dir} failed (exit code {result.returncode}):\n"
                f"{result.stdout}{result.stderr}"
            )
        hba = self.data_dir / "pg_hba.conf"
        hba.write_text(PG_HBA)
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

    def _launch(self) -> None:
        """Start the postmaster and wait until it accepts connections."""
        if self._log_file is None:
            self._log_file = open(self.log_path, "ab")
        log_offset = self._log_file.tell()
        try:
            self._proc = subprocess.Popen(
                self._command(),
                stdin=subprocess.DEVNULL,
                stdout=self._log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                **self._popen_kwargs(),
            )
        except OSError as exc:
            raise EmbeddedPostgresError(f"cannot start {self.bindir / 'postgres'}: {exc}") from exc
        ping_info = make_conninfo(
            "", host=self.host, port=str(self.port), user=self.user, dbname="postgres",
            connect_timeout="2",
        ).encode()  # fmt: skip
        deadline = time.monotonic() + self.startup_timeout
        delay = 0.01
        while True:
            code = self._proc.poll()
            if code is not None:
                self._proc = None
                raise EmbeddedPostgresError(
                    f"PostgreSQL on {self.host}:{self.port} exited during start-up "
                    f"(exit code {code}); server log:\n{self._log_since(log_offset)}"
                )
            if pq.PGconn.ping(ping_info) == pq.Ping.OK:
                return
            if time.monotonic() > deadline:
                self._shutdown()
                raise EmbeddedPostgresError(
                    f"PostgreSQL on {self.host}:{self.port} did not accept connections within "
                    f"{self.startup_timeout:.0f}s; server log tail:\n{self.log_tail(30)}"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.2)

    def _log_since(self, offset: int) -> str:
        """Return the log written since byte ``offset`` (at most the last 4 KiB)."""
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(max(offset, fh.seek(0, os.SEEK_END) - 4096))
                return fh.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def _shutdown(self) -> None:
        """Stop the postmaster: fast shutdown, then immediate, then SIGKILL."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        for sig, wait in (
            (signal.SIGINT, self.shutdown_timeout),
            (signal.SIGQUIT, 10.0),
        ):
            try:
                proc.send_signal(sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue
        self._proc = proc
        self.kill()
        self._proc = None
