"""Stop a throwaway server when the process that started it dies, however it dies.

``atexit`` stops the embedded PostgreSQL/MariaDB servers on a normal exit or Ctrl-C, but not when
the process is killed (``timeout``'s SIGTERM, SIGKILL, an OOM kill): their servers then ran on,
holding ports, memory and temporary directories. A ``ServerWatchdog`` is a tiny separate process
holding the read end of a pipe whose write end only the starting process has. When that process
ends in any way the pipe reads EOF; unless it said ``release()`` first (the server was stopped
normally), the watchdog signals the process named in the server's pid file (read then, so
restarts on the same directory are followed), escalates to SIGKILL after a grace period, and
removes the directory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

#: What the watchdog process runs: wait for EOF; a ``x`` first means "released, do nothing".
_SCRIPT = r"""
import os, shutil, signal, sys, time
fd, pid_file, directory, sig, grace, remove = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]), sys.argv[6] == "1"
try:
    released = os.read(fd, 1) == b"x"
except OSError:
    released = False
if released:
    sys.exit(0)
try:
    with open(pid_file) as fh:
        pid = int(fh.readline().strip())
except (OSError, ValueError):
    pid = None
if pid is not None:
    try:
        os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            os.kill(pid, 0)
            time.sleep(0.1)
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
if remove:
    time.sleep(0.2)
    shutil.rmtree(directory, ignore_errors=True)
"""


class ServerWatchdog:
    """A watchdog for one server directory; ``release()`` once the server was stopped normally."""

    def __init__(self, pid_file: Path, directory: Path, *, stop_signal: int = signal.SIGTERM,
                 grace_s: float = 30.0, remove_directory: bool = True):
        read_end, self._write_end = os.pipe()  # both close-on-exec: no other child inherits them
        try:
            subprocess.Popen(
                [sys.executable, "-c", _SCRIPT, str(read_end), str(pid_file), str(directory), str(int(stop_signal)),
                 str(grace_s), "1" if remove_directory else "0"],
                pass_fds=(read_end,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True,  # a Ctrl-C to our group does not reach it
            )
        except OSError:
            os.close(self._write_end)
            self._write_end = -1
            raise
        finally:
            os.close(read_end)

    def release(self) -> None:
        """The server was stopped and cleaned up normally: the watchdog exits without touching anything."""
        if self._write_end < 0:
            return
        try:
            os.write(self._write_end, b"x")
        except OSError:
            pass
        os.close(self._write_end)
        self._write_end = -1
