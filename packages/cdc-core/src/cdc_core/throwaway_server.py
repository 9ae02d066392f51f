"""The process management every throwaway database server shares (tests, benchmarks, demos).

A ``ThrowawayServer`` creates a temporary directory, initialises a server's data in it, starts the
server on a free TCP port of 127.0.0.1, waits until it answers, and on ``stop()`` shuts it down
and removes everything. When the current process is root it runs the server as the server's own
OS account; a ``ServerWatchdog`` stops it if this process is killed; ``atexit`` stops what a run
forgot. A server that fails to start keeps its log (copied out of the removed directory and named
in the error), and ``CDC_KEEP_SERVER_LOGS=<dir>`` keeps every server's log on ``stop()``.

A subclass (one per database: ``EmbeddedPostgres``, ``EmbeddedMariaDB``, ...) states its
differences as class attributes and a few small methods, in the style of sqlglot's dialects:

- ``product``, ``service_account``, ``install_hint``, ``temp_prefix``, ``log_name``: names;
- ``stop_signals``: how a shutdown escalates; ``port_taken_markers``: start-up errors that mean
  "pick another port"; ``env_drop_prefixes``: variables the server binaries must not see;
  ``switch_user``: whether we switch to the service account or the server does it itself;
  ``setting_on``/``setting_off``: how booleans are spelled in settings;
- ``_initialize()`` (create the data), ``_command()`` (the server's command line), ``_ping()``
  (does it answer?), ``pid_file`` (where the server writes its pid, read by the watchdog).

This module imports no database driver: cdc-core must stay importable without any.
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
from typing import Any, ClassVar

from cdc_core.server_watchdog import ServerWatchdog

__all__ = ["ThrowawayServer", "ThrowawayServerError", "free_port", "child_pids", "pid_alive"]

KEEP_LOGS_ENV = "CDC_KEEP_SERVER_LOGS"
"""Environment variable naming a directory where every stopped server's log is kept."""


class ThrowawayServerError(RuntimeError):
    """Raised when a throwaway server cannot be set up, started or stopped."""


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port on ``host`` that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def child_pids(pid: int) -> list[int]:
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


def pid_alive(pid: int) -> bool:
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


_LIVE: set[ThrowawayServer] = set()  # started servers, stopped at exit if still running


@atexit.register
def _stop_leftovers() -> None:
    """Stop servers a run forgot to stop, so no server outlives the interpreter."""
    for server in list(_LIVE):
        try:
            server.stop()
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass


class ThrowawayServer:
    """A database server in a temporary directory on a free port of 127.0.0.1; see the module docstring."""

    # ------------------------------------------------------------------ what a subclass states
    product: ClassVar[str] = "the server"
    """The product name used in messages ("PostgreSQL", "MariaDB")."""
    error: ClassVar[type[ThrowawayServerError]] = ThrowawayServerError
    """The exception raised (a subclass of ``ThrowawayServerError``)."""
    service_account: ClassVar[str] = ""
    """The OS user that runs the server when we are root ("": the current user, for servers that may run as root)."""
    install_hint: ClassVar[str] = "install the server binaries"
    """How to get the binaries, appended to "cannot find" errors."""
    temp_prefix: ClassVar[str] = "cdc-server-"
    """Prefix of the temporary directory."""
    log_name: ClassVar[str] = "server.log"
    """The server log's file name in the temporary directory."""
    log_to_stdout: ClassVar[bool] = True
    """True: the server's stdout and stderr are the log; False: it writes ``log_path`` itself."""
    stop_signals: ClassVar[tuple[tuple[int, float | None], ...]] = ((signal.SIGTERM, None),)
    """Shutdown escalation: (signal, seconds to wait; None = ``shutdown_timeout``), then SIGKILL."""
    port_taken_markers: ClassVar[tuple[str, ...]] = ("Address already in use",)
    """Start-up error texts meaning the port was taken meanwhile (another free port is tried)."""
    env_drop_prefixes: ClassVar[tuple[str, ...]] = ()
    """Environment variables with these prefixes are not passed to the server binaries."""
    switch_user: ClassVar[bool] = True
    """True: children run as the service account; False: the server switches itself (``--user``)."""
    setting_on: ClassVar[str] = "on"
    setting_off: ClassVar[str] = "off"
    default_settings: ClassVar[dict[str, str]] = {}
    """Server settings applied unless overridden (a value of None drops one)."""
    file_settings: ClassVar[tuple[str, ...]] = ()
    """Settings naming files the server reads (TLS certificates and keys): each given file is copied into
    ``base_dir/files`` (mode 0600, owned by the service account) and the setting points at the copy."""
    writes_pid_file: ClassVar[bool] = True
    """False: the server writes no pid file, so the base writes ``pid_file`` itself once the process started."""

    host = "127.0.0.1"

    def __init__(self, settings: dict[str, Any] | None = None, *, port: int | None = None,
                 startup_timeout: float = 60.0, shutdown_timeout: float = 30.0) -> None:
        """Describe a server; nothing happens until ``start()``."""
        self._settings = dict(self.default_settings)
        self._apply_settings(settings)
        self._fixed_port = port
        self.port: int = port or 0
        self.startup_timeout = startup_timeout
        self.shutdown_timeout = shutdown_timeout
        self._base_dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._watchdog: ServerWatchdog | None = None
        self._log_file: Any = None
        self._run_as: pwd.struct_passwd | None = None

    # ------------------------------------------------------------------ overridden per server
    def _initialize(self) -> None:
        """Create the server's data in ``base_dir`` (called once, before the first start)."""
        raise NotImplementedError

    def _command(self) -> list[str]:
        """The server's command line."""
        raise NotImplementedError

    def _ping(self) -> bool:
        """Tell whether the server accepts connections now."""
        raise NotImplementedError

    @property
    def pid_file(self) -> Path:
        """The file the server writes its process id to (the watchdog reads it)."""
        raise NotImplementedError

    def _setting_key(self, key: str) -> str:
        """A setting's name as the server spells it."""
        return key

    # ------------------------------------------------------------------ properties
    @property
    def base_dir(self) -> Path:
        """The temporary directory holding data, socket and log."""
        if self._base_dir is None:
            raise self.error("the embedded server has not been started yet")
        return self._base_dir

    @property
    def log_path(self) -> Path:
        """The server log file."""
        return self.base_dir / self.log_name

    @property
    def pid(self) -> int | None:
        """The server's process id, or None when not running."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    @property
    def running(self) -> bool:
        """Tell whether the server process is alive."""
        return self.pid is not None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> Any:
        """Create the data if needed, start the server and wait until it accepts connections."""
        if self.running:
            return self
        if self._base_dir is None:
            self._prepare()
        if self._watchdog is None:  # stops the server if this process is killed
            self._watchdog = ServerWatchdog(self.pid_file, self.base_dir, stop_signal=self.stop_signals[0][0],
                                            grace_s=self.shutdown_timeout)
        attempts = 1 if self._fixed_port else 3
        for attempt in range(attempts):
            try:
                self._launch()
                break
            except ThrowawayServerError as exc:
                if attempt + 1 < attempts and any(m in str(exc) for m in self.port_taken_markers):
                    self.port = free_port(self.host)
                    continue
                kept = self._keep_log("failed")
                if kept is not None:
                    raise self.error(f"{exc}\n(the whole server log is kept at {kept})") from exc
                raise
        _LIVE.add(self)
        return self

    def stop(self) -> None:
        """Shut the server down (escalating if it hangs) and remove its temporary files."""
        self._shutdown()
        _LIVE.discard(self)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self._base_dir is not None:
            if os.environ.get(KEEP_LOGS_ENV):
                self._keep_log("stopped")
            shutil.rmtree(self._base_dir, ignore_errors=True)
            self._base_dir = None
            self._after_remove()
        if self._watchdog is not None:
            self._watchdog.release()
            self._watchdog = None

    def kill(self) -> None:
        """SIGKILL the server and its child processes, as a crash would."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        children = child_pids(proc.pid)
        proc.kill()
        proc.wait()
        for child in children:
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10.0
        while any(pid_alive(c) for c in children) and time.monotonic() < deadline:
            time.sleep(0.01)

    def restart(self, settings: dict[str, Any] | None = None) -> None:
        """Stop the server if it runs and start it again on the same port and data (with changed settings, if given)."""
        self._shutdown()
        self._apply_settings(settings)
        self.start()

    def __enter__(self) -> Any:
        """Start the server."""
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        """Stop the server and remove its temporary files."""
        self.stop()

    def __repr__(self) -> str:
        """Show where the server listens and whether it runs."""
        return f"<{type(self).__name__} {self.host}:{self.port} {'running' if self.running else 'stopped'}>"

    def log_tail(self, n: int = 40) -> str:
        """Return the last ``n`` lines of the server log."""
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as fh:
                return "".join(deque(fh, maxlen=n))
        except (OSError, ThrowawayServerError):
            return ""

    # ------------------------------------------------------------------ internals
    def _apply_settings(self, settings: dict[str, Any] | None) -> None:
        """Merge ``settings`` into the current ones (None drops a setting; booleans spelled as the server does)."""
        for key, value in (settings or {}).items():
            key = self._setting_key(key)
            if value is None:
                self._settings.pop(key, None)
            elif isinstance(value, bool):
                self._settings[key] = self.setting_on if value else self.setting_off
            else:
                self._settings[key] = str(value)

    def _after_remove(self) -> None:
        """Forget state tied to the removed temporary directory."""

    def _prepare(self) -> None:
        """Create the temporary directory and the server's data in it; choose a port."""
        self._run_as = self._server_account()
        self._base_dir = Path(tempfile.mkdtemp(prefix=self.temp_prefix))
        try:
            if self._run_as is not None:
                os.chmod(self._base_dir, 0o755)
                os.chown(self._base_dir, self._run_as.pw_uid, self._run_as.pw_gid)
            self._initialize()
            if not self.port:
                self.port = free_port(self.host)
        except BaseException:
            shutil.rmtree(self._base_dir, ignore_errors=True)
            self._base_dir = None
            raise

    def _server_account(self) -> pwd.struct_passwd | None:
        """The OS account to run the server as when we are root, else None."""
        if os.geteuid() != 0 or not self.service_account:
            return None
        try:
            return pwd.getpwnam(self.service_account)
        except KeyError:
            raise self.error(
                f"running as root, but {self.product} must not run as root and the OS user "
                f"{self.service_account!r} that runs it does not exist; create it "
                f"(`useradd --system {self.service_account}`, or {self.install_hint}) or run as a non-root user"
            ) from None

    def _chown_tree(self, path: Path) -> None:
        """Give ``path`` and everything below it to the service account (when we are root)."""
        if self._run_as is None:
            return
        uid, gid = self._run_as.pw_uid, self._run_as.pw_gid
        os.chown(path, uid, gid)
        for root, dirs, files in os.walk(path):
            for name in dirs + files:
                os.chown(os.path.join(root, name), uid, gid, follow_symlinks=False)

    def _popen_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for a server binary: the temporary directory, a clean env, the service account."""
        env = {k: v for k, v in os.environ.items() if not (self.env_drop_prefixes and k.startswith(self.env_drop_prefixes))}
        env["LC_ALL"] = "C"
        env.pop("LANG", None)
        kwargs: dict[str, Any] = {"env": env, "cwd": str(self.base_dir)}
        if self._run_as is not None and self.switch_user:
            kwargs.update(user=self._run_as.pw_uid, group=self._run_as.pw_gid, extra_groups=[])
            env["HOME"] = self._run_as.pw_dir
            env["USER"] = env["LOGNAME"] = self._run_as.pw_name
        return kwargs

    def _run_tool(self, cmd: list[str], what: str, timeout: float = 180) -> None:
        """Run a set-up tool (initdb, install-db) to completion; raise with its output if it fails."""
        try:
            result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **self._popen_kwargs())
        except (OSError, subprocess.SubprocessError) as exc:
            raise self.error(f"cannot run {cmd[0]}: {exc}") from exc
        if result.returncode != 0:
            raise self.error(f"{what} failed (exit code {result.returncode}):\n{result.stdout}{result.stderr}")

    def _place_files(self) -> None:
        """Copy the files that ``file_settings`` name into ``base_dir/files``, readable by the server only."""
        target = self.base_dir / "files"
        for key in map(self._setting_key, self.file_settings):
            value = self._settings.get(key)
            if not value or Path(value).parent == target:
                continue
            target.mkdir(mode=0o700, exist_ok=True)
            copy = target / f"{key.replace('-', '_')}{Path(value).suffix}"
            shutil.copyfile(value, copy)
            os.chmod(copy, 0o600)
            self._settings[key] = str(copy)
        if target.exists():
            self._chown_tree(target)

    def _launch(self) -> None:
        """Start the server and wait until it accepts connections."""
        self._place_files()
        if self.log_to_stdout:
            if self._log_file is None:
                self._log_file = open(self.log_path, "ab")
            offset = self._log_file.tell()
            out: Any = self._log_file
        else:
            offset = self.log_path.stat().st_size if self.log_path.exists() else 0
            out = subprocess.DEVNULL
        cmd = self._command()
        try:
            self._proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                          start_new_session=True, **self._popen_kwargs())
        except OSError as exc:
            raise self.error(f"cannot start {cmd[0]}: {exc}") from exc
        if not self.writes_pid_file:
            self.pid_file.write_text(str(self._proc.pid))
        deadline = time.monotonic() + self.startup_timeout
        delay = 0.01
        while True:
            code = self._proc.poll()
            if code is not None:
                self._proc = None
                raise self.error(f"{self.product} on {self.host}:{self.port} exited during start-up "
                                 f"(exit code {code}); server log:\n{self._log_since(offset)}")
            if self._ping():
                return
            if time.monotonic() > deadline:
                self._shutdown()
                raise self.error(f"{self.product} on {self.host}:{self.port} did not accept connections within "
                                 f"{self.startup_timeout:.0f}s; server log tail:\n{self.log_tail(30)}")
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

    def _keep_log(self, why: str) -> Path | None:
        """Copy the server log out of the temporary directory (to ``$CDC_KEEP_SERVER_LOGS`` or the temp dir)."""
        try:
            source = self.log_path
            if not source.exists():
                return None
            target_dir = Path(os.environ.get(KEEP_LOGS_ENV) or tempfile.gettempdir())
            target_dir.mkdir(parents=True, exist_ok=True)
            target = target_dir / f"{self.temp_prefix}{why}-{self.port}-{time.strftime('%Y%m%dT%H%M%S')}.log"
            shutil.copyfile(source, target)
            return target
        except (OSError, ThrowawayServerError):
            return None

    def _shutdown(self) -> None:
        """Stop the server: the ``stop_signals`` in turn, then SIGKILL."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        for sig, wait in self.stop_signals:
            try:
                proc.send_signal(sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(timeout=self.shutdown_timeout if wait is None else wait)
                return
            except subprocess.TimeoutExpired:
                continue
        self._proc = proc
        self.kill()
        self._proc = None
