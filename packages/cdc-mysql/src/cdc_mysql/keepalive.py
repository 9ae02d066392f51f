"""``connect.keep.alive``: notice a dead binlog connection and reopen it where the connector left off.

Debezium's binlog client runs a keep-alive thread that asks the server for heartbeats every 0.8 x
``connect.keep.alive.interval.ms`` and reconnects when nothing arrived for a whole interval. Here
the same is done without a thread: the server's heartbeat period is set the same way, the
replication socket gets a read timeout of one interval (and TCP keep-alive), so a silent or broken
connection ends the read; the streamer then asks ``KeepAlive.reconnect`` for a new reader at the
position it last delivered (the start of the open transaction, whose handled events it skips).
Connection failures are retried with back-off (0.1 s doubling up to one interval) until the server
answers or the connector stops, as Debezium's keep-alive thread does; anything else (a purged
binlog, missing privileges) ends streaming at once. mysql-replication's own reconnect is never
used: it restarts from the position it last saw, with MariaDB file positions from the first binlog.

With ``connect.keep.alive=false`` a dropped connection ends streaming with ``BinlogConnectionLost``
and the engine's retry (``errors.max.retries``) restarts the connector from the acknowledged offset.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pymysql

from cdc_core.config import Config

from cdc_mysql import config as myc
from cdc_mysql.binlog import BinlogConnectionLost, BinlogStartPosition, CdcBinLogStreamReader

#: Debezium's ``heartbeatIntervalFactor``: the server's heartbeat period as a share of the keep-alive interval.
HEARTBEAT_FACTOR = 0.8
#: The heartbeat period without keep-alive (it also paces idle batches and heartbeat checkpoints).
DEFAULT_HEARTBEAT_S = 1.0
#: First back-off delay between reconnection attempts.
FIRST_DELAY_S = 0.1

#: Server error codes that mean "not reachable right now" rather than "refused": worth retrying.
RETRIABLE_CODES = frozenset({1040, 1053, 1927, 2002, 2003, 2006, 2013, 2055})


def retriable(error: BaseException) -> bool:
    """True for failures to reach the server (worth another attempt), False for refusals."""
    if isinstance(error, (BinlogConnectionLost, OSError, pymysql.err.InterfaceError)):
        return True
    if isinstance(error, pymysql.err.OperationalError):
        return bool(error.args) and error.args[0] in RETRIABLE_CODES
    return False


class KeepAlive:
    """The keep-alive settings of one connector and the reconnection loop they drive."""

    def __init__(self, config: Config, open_reader: Callable[[BinlogStartPosition], CdcBinLogStreamReader],
                 stop: threading.Event, log: Any, on_disconnect: Callable[[], None] = lambda: None):
        self.enabled: bool = config.get(myc.KEEP_ALIVE)
        self.interval_s = config.get(myc.KEEP_ALIVE_INTERVAL_MS) / 1000.0
        self.open_reader = open_reader
        self.stop = stop
        self.log = log
        self.on_disconnect = on_disconnect
        #: How many times a lost connection was reopened.
        self.reconnects = 0

    @property
    def heartbeat_seconds(self) -> float:
        """The heartbeat period to ask the server for."""
        if not self.enabled:
            return DEFAULT_HEARTBEAT_S
        return min(DEFAULT_HEARTBEAT_S, HEARTBEAT_FACTOR * self.interval_s)

    @property
    def read_timeout(self) -> float | None:
        """The replication socket's read timeout: one interval with keep-alive, none without."""
        return self.interval_s if self.enabled else None

    def reconnect(self, start: BinlogStartPosition, error: BaseException, old: CdcBinLogStreamReader | None
                  ) -> CdcBinLogStreamReader:
        """A connected reader at ``start`` after ``error`` ended ``old``; retries until connected or stopped."""
        self.on_disconnect()
        if old is not None:
            old.close()
        delay = FIRST_DELAY_S
        attempt = 0
        self.log.warning("the binlog connection was lost (%s); reconnecting from %s", error, start)
        while True:
            if self.stop.is_set():
                raise BinlogConnectionLost("stopped while reconnecting")
            attempt += 1
            reader = self.open_reader(start)
            try:
                reader.connect()
            except Exception as e:  # noqa: BLE001 - classified below
                reader.close()
                if not retriable(e):
                    raise
                self.log.warning("reconnecting the binlog client failed (attempt %d: %s); next attempt in %.1fs",
                                 attempt, _first_line(e), delay)
                if self.stop.wait(delay):
                    raise BinlogConnectionLost("stopped while reconnecting") from None
                delay = min(delay * 2, self.interval_s)
                continue
            self.reconnects += 1
            self.log.info("binlog client reconnected at %s after %d attempt(s)", start, attempt)
            return reader


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]

