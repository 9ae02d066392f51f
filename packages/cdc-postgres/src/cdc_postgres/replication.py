"""A logical replication connection on ``psycopg.pq`` (libpq), the streaming half of the connector.

``ReplicationConnection`` speaks the replication sub-protocol: IDENTIFY_SYSTEM, slot creation
with an exported snapshot, START_REPLICATION in COPY BOTH mode, XLogData frames out, standby
status updates back. Keepalives are answered inside ``read()``; the flushed position reported to
the server only moves when the caller ``confirm()``s what its sink has acknowledged.

While the caller does not read (a blocking snapshot pauses streaming, a slow sink holds the
queue full), a background thread keeps sending status updates often enough for the server's
``wal_sender_timeout``, so the walsender is not ended and nothing is streamed twice after a
reconnect. Every use of the libpq connection holds one lock; that thread only ever takes it
when free.

A connection that goes silent (a network black hole: no bytes, no close) is noticed while
reading: after ``idle_status_interval`` without a byte from the server, a status update asks
for a reply (the walsender answers at once with a keepalive); if nothing at all arrives within
``silence_timeout`` (the server's ``wal_sender_timeout``, after which the server gives up on
us too) the connection is declared lost, so the caller reconnects.
"""

from __future__ import annotations

import math
import os
import re
import select
import threading
import time
from struct import Struct
from typing import Any, Mapping, NamedTuple

from psycopg import errors as pg_errors
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict, make_conninfo

__all__ = [
    "ReplicationConnection",
    "ReplicationConnectionLost",
    "ReplicationError",
    "SlotCreated",
    "XLogData",
    "format_lsn",
    "parse_lsn",
    "publication_names",
    "quote_ident",
    "quote_literal",
]

PG_EPOCH_OFFSET_US = 946_684_800 * 1_000_000
"""Microseconds between the Unix epoch and the PostgreSQL epoch (2000-01-01 UTC)."""

MAX_MESSAGES_PER_READ = 10_000
"""The most XLogData frames one ``read()`` call returns."""

DEFAULT_SILENCE_TIMEOUT_S = 60.0
"""How long a silent connection is given when the server's ``wal_sender_timeout`` is unknown or off."""

MIN_SILENCE_TIMEOUT_S = 1.0
"""The shortest silence that counts as a lost connection, whatever ``wal_sender_timeout`` says."""

_XLOGDATA_HEADER = Struct(">QQq")  # dataStart, walEnd, sendTime after the 'w'
_KEEPALIVE = Struct(">QqB")  # walEnd, sendTime, replyRequested after the 'k'
_STATUS_UPDATE = Struct(">cQQQqB")  # 'r', write, flush, apply, clock, replyRequested
_W, _K = ord("w"), ord("k")
_new = tuple.__new__  # builds NamedTuples without the generated __new__'s extra Python call
_LSN_RE = re.compile(r"^\s*([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})\s*$")
_PLAIN_OPTION_RE = re.compile(r"^[a-z_][a-z0-9_]*$")
_DURATION_RE = re.compile(r"^\s*(\d+)\s*(us|ms|s|min|h|d)?\s*$")
_DURATION_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


class ReplicationError(ConnectionError):
    """Raised when the replication connection cannot be made or the server rejects a command."""

    def __init__(self, message: str, sqlstate: str | None = None) -> None:
        """Keep the server's SQLSTATE (if any) next to the message."""
        super().__init__(message)
        self.sqlstate = sqlstate

    def __reduce__(self) -> tuple[type, tuple[str, str | None]]:
        """Pickled with its SQLSTATE (a streaming worker's error reaches the engine so)."""
        return type(self), (str(self), self.sqlstate)


class ReplicationConnectionLost(ReplicationError):
    """Raised when the server closes the connection or ends the replication stream."""


class XLogData(NamedTuple):
    """One XLogData frame; ``payload`` is the pgoutput message, ``send_time_us`` Unix-epoch µs."""

    data_start: int
    wal_end: int
    send_time_us: int
    payload: memoryview | bytes


class SlotCreated(NamedTuple):
    """The answer to CREATE_REPLICATION_SLOT."""

    slot_name: str
    consistent_point: int
    snapshot_name: str | None
    output_plugin: str | None


def parse_lsn(text: str) -> int:
    """Parse a textual LSN such as ``16/B374D848`` into an integer."""
    match = _LSN_RE.match(text)
    if not match:
        raise ValueError(f"not a PostgreSQL LSN (expected e.g. '16/B374D848'): {text!r}")
    return (int(match.group(1), 16) << 32) | int(match.group(2), 16)


def format_lsn(lsn: int) -> str:
    """Format an integer LSN the way PostgreSQL prints it, e.g. ``16/B374D848``."""
    if not 0 <= lsn < 1 << 64:
        raise ValueError(f"LSN out of range: {lsn}")
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def quote_ident(name: str) -> str:
    """Double-quote an identifier for a replication command (doubling embedded quotes)."""
    if "\0" in name:
        raise ValueError(f"identifier contains a NUL byte: {name!r}")
    return '"' + name.replace('"', '""') + '"'


def quote_literal(value: str) -> str:
    """Single-quote a string literal for a replication command (doubling embedded quotes)."""
    if "\0" in value:
        raise ValueError(f"literal contains a NUL byte: {value!r}")
    return "'" + value.replace("'", "''") + "'"


def publication_names(names: list[str] | tuple[str, ...] | str) -> str:
    """Build the ``publication_names`` option value: quoted identifiers joined by commas."""
    if isinstance(names, str):
        names = [names]
    return ",".join(quote_ident(n) for n in names)


def parse_duration(text: str) -> float | None:
    """Seconds of a GUC duration as SHOW prints it (``60s``, ``1min``, ``500ms``); None if unreadable."""
    m = _DURATION_RE.match(text)
    if m is None:
        return None
    return int(m.group(1)) * _DURATION_UNITS[m.group(2) or "ms"]


def _now_pg_us() -> int:
    """The current time as PostgreSQL-epoch microseconds."""
    return time.time_ns() // 1000 - PG_EPOCH_OFFSET_US


def _describe_target(params: Mapping[str, str]) -> str:
    """Return ``host:port`` (plus database) for messages, never credentials."""
    host = params.get("host") or params.get("hostaddr") or os.environ.get("PGHOST")
    host = host or "the default Unix socket"
    port = params.get("port") or os.environ.get("PGPORT") or "5432"
    dbname = params.get("dbname") or os.environ.get("PGDATABASE")
    target = f"{host}:{port}"
    return f"{target} (database {dbname!r})" if dbname else target


def _result_error(res: pq.PGresult) -> tuple[str, str | None]:
    """Extract a readable message and the SQLSTATE from an error result."""
    fields = pq.DiagnosticField

    def field(code: pq.DiagnosticField) -> str | None:
        raw = res.error_field(code)
        return raw.decode("utf-8", "replace") if raw else None

    primary = field(fields.MESSAGE_PRIMARY) or res.get_error_message().strip() or "unknown error"
    sqlstate = field(fields.SQLSTATE)
    parts = [primary]
    if detail := field(fields.MESSAGE_DETAIL):
        parts.append(f"DETAIL: {detail}")
    if hint := field(fields.MESSAGE_HINT):
        parts.append(f"HINT: {hint}")
    if sqlstate:
        parts.append(f"(SQLSTATE {sqlstate})")
    return " ".join(parts), sqlstate


class ReplicationConnection:
    """A logical replication connection (``replication=database``) speaking pgoutput."""

    def __init__(
        self,
        conninfo: str,
        *,
        status_interval: float = 10.0,
        connect_timeout: float | None = None,
    ) -> None:
        """Connect to the server described by ``conninfo`` (libpq string or URI).

        ``status_interval`` is the longest gap between standby status updates while streaming;
        confirmations are coalesced to at most one update per ``status_interval / 10``.
        """
        params = conninfo_to_dict(conninfo)
        self._target = _describe_target(params)
        extra: dict[str, Any] = {"replication": "database"}
        if "client_encoding" not in params:
            extra["client_encoding"] = "UTF8"
        if connect_timeout is not None:
            extra["connect_timeout"] = str(max(1, int(connect_timeout)))
        self.status_interval = float(status_interval)
        self._min_status_gap = self.status_interval / 10.0
        self._pg = pq.PGconn.connect(make_conninfo(conninfo, **extra).encode())
        if self._pg.status != pq.ConnStatus.OK:
            message = self._pg.get_error_message().strip() or "unknown error"
            self._pg.finish()
            raise ReplicationError(
                f"cannot open a replication connection to PostgreSQL at {self._target}: "
                f"{message}"
            )
        self._fd = self._pg.socket
        self._poller = select.poll()
        self._poller.register(self._fd, select.POLLIN)
        self._streaming = False
        self._closed = False
        self._confirmed = 0
        self._last_received = 0
        self._server_wal_end = 0
        self._status_pending = False
        self._last_status = 0.0
        self._lock = threading.Lock()
        self._lost: str | None = None
        self._keeper: threading.Thread | None = None
        #: Seconds between background status updates while the caller is not reading.
        self.idle_status_interval = self.status_interval
        #: Seconds without a byte after a reply was asked for, before the connection counts as lost.
        self.silence_timeout = DEFAULT_SILENCE_TIMEOUT_S
        self._last_heard = time.monotonic()
        self._probe_at: float | None = None

    # ----------------------------------------------------------------------------- properties

    @property
    def server_version(self) -> int:
        """The server version number, e.g. 150004."""
        return int(self._pg.server_version)

    @property
    def confirmed_lsn(self) -> int:
        """The flushed position last confirmed by the caller (reported as flush and apply)."""
        return self._confirmed

    @property
    def last_received_lsn(self) -> int:
        """The highest ``data_start`` received so far (reported as the write position)."""
        return self._last_received

    @property
    def server_wal_end(self) -> int:
        """The server's WAL end as last reported in a keepalive or XLogData frame."""
        return self._server_wal_end

    @property
    def closed(self) -> bool:
        """Tell whether ``close()`` was called or the connection was lost."""
        return self._closed

    def __repr__(self) -> str:
        """Show the target (no credentials) and the replication positions."""
        state = "closed" if self._closed else ("streaming" if self._streaming else "idle")
        return (
            f"<ReplicationConnection {self._target} {state} "
            f"confirmed={format_lsn(self._confirmed)}>"
        )

    # ----------------------------------------------------------------------------- commands

    def _command(self, command: str, ok: pq.ExecStatus) -> pq.PGresult:
        """Run one replication command and return its result, raising on failure."""
        if self._closed:
            raise ReplicationError(f"the replication connection to {self._target} is closed")
        if self._streaming:
            raise ReplicationError(
                f"cannot run {command.split()[0]} on {self._target}: the connection is streaming"
            )
        res = self._pg.exec_(command.encode())
        if res.status == ok:
            return res
        if self._pg.status != pq.ConnStatus.OK:
            message = self._pg.get_error_message().strip()
            self._mark_lost()
            raise ReplicationConnectionLost(
                f"lost the replication connection to {self._target} during "
                f"{command.split()[0]}: {message}"
            )
        message, sqlstate = _result_error(res)
        raise ReplicationError(
            f"{command.split()[0]} failed on {self._target}: {message}", sqlstate
        )

    def identify_system(self) -> dict[str, Any]:
        """Run IDENTIFY_SYSTEM: ``systemid`` (str), ``timeline``, ``xlogpos`` (int), ``dbname``."""
        res = self._command("IDENTIFY_SYSTEM", pq.ExecStatus.TUPLES_OK)
        raw = [res.get_value(0, i) for i in range(res.nfields)]
        text = [v.decode() if v is not None else None for v in raw]
        return {
            "systemid": text[0],
            "timeline": int(text[1]) if text[1] is not None else None,
            "xlogpos": parse_lsn(text[2]) if text[2] else 0,
            "dbname": text[3] if len(text) > 3 else None,
        }

    def create_slot(
        self,
        name: str,
        plugin: str = "pgoutput",
        export_snapshot: bool = True,
        *,
        temporary: bool = False,
    ) -> SlotCreated:
        """Create a logical slot, by default exporting a snapshot valid until the next command.

        Read the snapshot from another connection with ``SET TRANSACTION SNAPSHOT`` before
        running anything else on this one.
        """
        head = f"CREATE_REPLICATION_SLOT {quote_ident(name)}"
        if temporary:
            head += " TEMPORARY"
        head += f" LOGICAL {quote_ident(plugin)}"
        if self.server_version >= 150000:
            mode = "export" if export_snapshot else "nothing"
            command = f"{head} (SNAPSHOT '{mode}')"
        else:
            command = f"{head} {'EXPORT_SNAPSHOT' if export_snapshot else 'NOEXPORT_SNAPSHOT'}"
        res = self._command(command, pq.ExecStatus.TUPLES_OK)
        values = [res.get_value(0, i) for i in range(res.nfields)]
        text = [v.decode() if v is not None else None for v in values]
        return SlotCreated(
            slot_name=text[0] or name,
            consistent_point=parse_lsn(text[1]) if text[1] else 0,
            snapshot_name=text[2],
            output_plugin=text[3],
        )

    def drop_slot(self, name: str, wait: bool = True) -> None:
        """Drop a replication slot; with ``wait`` block while another connection uses it."""
        command = f"DROP_REPLICATION_SLOT {quote_ident(name)}"
        if wait:
            command += " WAIT"
        self._command(command, pq.ExecStatus.COMMAND_OK)

    def start(self, slot: str, start_lsn: int, options: Mapping[str, str]) -> None:
        """Issue START_REPLICATION for ``slot`` from ``start_lsn`` and enter COPY BOTH mode.

        ``options`` are output plugin options, e.g. ``{"proto_version": "1",
        "publication_names": publication_names(["pub"]), "messages": "true"}``; values are
        quoted here. ``start_lsn`` 0 means the slot's confirmed position; a non-zero value is
        also taken as already confirmed.
        """
        parts = []
        for key, value in options.items():
            name = key if _PLAIN_OPTION_RE.match(key) else quote_ident(key)
            parts.append(f"{name} {quote_literal(str(value))}")
        self._plan_idle_status()
        command = f"START_REPLICATION SLOT {quote_ident(slot)} LOGICAL {format_lsn(start_lsn)}"
        if parts:
            command += " (" + ", ".join(parts) + ")"
        self._command(command, pq.ExecStatus.COPY_BOTH)
        self._streaming = True
        self._confirmed = max(self._confirmed, start_lsn)
        self._last_received = max(self._last_received, start_lsn)
        self._status_pending = False
        self._last_status = time.monotonic()
        self._last_heard = time.monotonic()
        self._probe_at = None
        self._keeper = threading.Thread(target=self._keep_status, name="cdc-pg-status", daemon=True)
        self._keeper.start()

    def _plan_idle_status(self) -> None:
        """Pick the background status interval: well inside the server's ``wal_sender_timeout``."""
        try:
            res = self._command("SHOW wal_sender_timeout", pq.ExecStatus.TUPLES_OK)
            value = res.get_value(0, 0)
            timeout = parse_duration(value.decode()) if value is not None else None
        except ReplicationConnectionLost:
            raise
        except ReplicationError:
            timeout = None  # unknown: the status interval alone
        interval = self.status_interval
        if timeout:  # 0 disables the server's timeout
            interval = min(interval, timeout / 4.0)
            self.silence_timeout = max(MIN_SILENCE_TIMEOUT_S, timeout)
        self.idle_status_interval = max(0.05, interval)

    def _keep_status(self) -> None:
        """Background: send a status update whenever the caller has not for ``idle_status_interval``."""
        interval = self.idle_status_interval
        while True:
            time.sleep(interval / 2.0)
            if self._closed or not self._streaming:
                return
            if time.monotonic() - self._last_status < interval or not self._lock.acquire(blocking=False):
                continue  # recent enough, or a read() is in progress and answers the server itself
            try:
                if self._streaming and not self._closed:
                    self._send_status()
            except ReplicationError:
                return  # the connection is marked lost; the next read() reports it
            finally:
                self._lock.release()

    # ----------------------------------------------------------------------------- streaming

    def read(self, timeout: float) -> list[XLogData]:
        """Wait up to ``timeout`` seconds for XLogData, then return everything already buffered.

        Keepalives are consumed here (answered at once when the server asks) and standby status
        updates are sent when due. Returns an empty list when nothing arrived in time.
        """
        with self._lock:
            return self._read(timeout)

    def _read(self, timeout: float) -> list[XLogData]:
        if self._lost is not None:
            raise ReplicationConnectionLost(self._lost)
        if not self._streaming:
            raise ReplicationError(
                f"read() on the replication connection to {self._target} before start()"
            )
        out: list[XLogData] = []
        self._drain(out)
        if not out:
            now = time.monotonic()
            deadline = now + timeout
            while True:
                self._maybe_send_status(now)
                wait = max(0.0, min(deadline - now, self._next_status_due(now) - now))
                if self._poller.poll(math.ceil(wait * 1000)):
                    self._consume()
                    self._drain(out)
                    if out:
                        break
                now = time.monotonic()
                self._check_silence(now)
                if now >= deadline:
                    break
        self._maybe_send_status(time.monotonic())
        return out

    def confirm(self, lsn: int) -> None:
        """Record ``lsn`` as flushed by the sink; the server learns of it in a status update."""
        if lsn <= self._confirmed:
            return
        self._confirmed = lsn
        self._status_pending = True
        if self._streaming and not self._closed:
            with self._lock:
                if self._streaming and not self._closed:
                    self._maybe_send_status(time.monotonic())

    def send_status(self, reply_requested: bool = False) -> None:
        """Send a standby status update now (write = last received, flush = apply = confirmed)."""
        with self._lock:
            self._send_status(reply_requested)

    def _send_status(self, reply_requested: bool = False) -> None:
        if not self._streaming or self._closed:
            return
        write = max(self._last_received, self._confirmed)
        message = _STATUS_UPDATE.pack(
            b"r", write, self._confirmed, self._confirmed, _now_pg_us(), int(reply_requested)
        )
        try:
            self._pg.put_copy_data(message)
            self._pg.flush()
        except pg_errors.OperationalError as exc:
            self._mark_lost()
            self._lost = (f"lost the replication connection to {self._target} while sending a status "
                          f"update: {exc}")
            raise ReplicationConnectionLost(self._lost) from None
        self._status_pending = False
        self._last_status = time.monotonic()

    def _next_status_due(self, now: float) -> float:
        """The monotonic time by which the next status update must go out (or the silence be checked)."""
        if self._status_pending:
            return max(now, self._last_status + self._min_status_gap)
        due = self._last_status + self.status_interval
        if self._probe_at is None:
            return min(due, max(now, self._last_heard + self.idle_status_interval))
        return min(due, max(now, self._probe_at + self.silence_timeout))

    def _check_silence(self, now: float) -> None:
        """Ask for a reply after ``idle_status_interval`` of silence; lost if none comes within ``silence_timeout``."""
        if self._probe_at is None:
            if now - self._last_heard >= self.idle_status_interval:
                self._send_status(reply_requested=True)
                self._probe_at = now
        elif now - self._probe_at >= self.silence_timeout:
            silent = now - self._last_heard
            self._mark_lost()
            self._lost = (f"no message from the server at {self._target} for {silent:.1f}s, not even an answer to a "
                          f"keepalive request within {self.silence_timeout:g}s (wal_sender_timeout): the connection "
                          "is silent (a network black hole?); reconnecting")
            raise ReplicationConnectionLost(self._lost)

    def _maybe_send_status(self, now: float) -> None:
        """Send a status update if a confirmation is pending or the interval has elapsed."""
        since = now - self._last_status
        if since >= self.status_interval or (
            self._status_pending and since >= self._min_status_gap
        ):
            self._send_status()

    def _consume(self) -> None:
        """Read what the socket holds into libpq's buffer."""
        try:
            self._pg.consume_input()
            self._last_heard = time.monotonic()
            self._probe_at = None
        except pg_errors.OperationalError as exc:
            self._mark_lost()
            raise ReplicationConnectionLost(
                f"lost the replication connection to {self._target}: {exc}"
            ) from None

    def _drain(self, out: list[XLogData]) -> None:
        """Move complete frames already buffered by libpq into ``out`` without blocking."""
        get = self._pg.get_copy_data
        unpack_w = _XLOGDATA_HEADER.unpack_from
        append = out.append
        received = self._last_received
        wal_end_max = self._server_wal_end
        room = MAX_MESSAGES_PER_READ - len(out)
        try:
            while room > 0:
                nbytes, data = get(1)
                if nbytes <= 0:
                    if nbytes == 0:
                        break
                    self._stream_ended()
                kind = data[0]
                if kind == _W:
                    start, wal_end, sent = unpack_w(data, 1)
                    append(_new(XLogData, (start, wal_end, sent + PG_EPOCH_OFFSET_US, data[25:])))
                    room -= 1
                    if start > received:
                        received = start
                    if wal_end > wal_end_max:
                        wal_end_max = wal_end
                elif kind == _K:
                    wal_end, _sent, reply = _KEEPALIVE.unpack_from(data, 1)
                    if wal_end > wal_end_max:
                        wal_end_max = wal_end
                    if reply:
                        self._last_received = received
                        self._server_wal_end = wal_end_max
                        self._send_status()
        except pg_errors.OperationalError as exc:
            self._mark_lost()
            raise ReplicationConnectionLost(
                f"lost the replication connection to {self._target}: {exc}"
            ) from None
        finally:
            self._last_received = received
            self._server_wal_end = wal_end_max

    def _stream_ended(self) -> None:
        """Handle the end of COPY BOTH: the server stopped streaming or went away."""
        self._streaming = False
        detail = ""
        for _ in range(10):  # bounded: a broken connection must not spin here
            res = self._pg.get_result()
            if res is None:
                break
            if res.status == pq.ExecStatus.FATAL_ERROR:
                message, _sqlstate = _result_error(res)
                detail = f": {message}"
            elif res.status == pq.ExecStatus.COPY_IN:
                # The server sent CopyDone but COPY BOTH stays open our way: end it too.
                try:
                    self._pg.put_copy_end()
                    self._pg.flush()
                except pg_errors.OperationalError:
                    break
        if self._pg.status != pq.ConnStatus.OK:
            detail = detail or f": {self._pg.get_error_message().strip()}"
        self._mark_lost()
        raise ReplicationConnectionLost(
            f"the server at {self._target} ended the replication stream{detail}"
        )

    def _mark_lost(self) -> None:
        """Release the libpq connection after it failed."""
        self._streaming = False
        self._closed = True
        try:
            self._poller.unregister(self._fd)
        except (KeyError, ValueError):
            pass
        self._pg.finish()

    # ----------------------------------------------------------------------------- lifecycle

    def close(self) -> None:
        """Send a last status update if a confirmation is pending, then disconnect."""
        with self._lock:
            if self._closed:
                return
            if self._streaming and self._status_pending:
                try:
                    self._send_status()
                except ReplicationError:
                    pass
            self._streaming = False
            self._closed = True
            self._pg.finish()

    def __enter__(self) -> ReplicationConnection:
        """Return the connection itself."""
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Close the connection."""
        self.close()

    def __del__(self) -> None:
        """Release the libpq connection if the caller forgot to close it."""
        pg = getattr(self, "_pg", None)
        if pg is not None and not getattr(self, "_closed", True):
            pg.finish()
