"""The binlog connection: mysql-replication's BinLogStreamReader, started where cdc says, never reconnecting.

``BinLogStreamReader`` reconnects by itself after some errors, from whatever position it last saw
(with MariaDB file positions, from the start of the first binlog). cdc never lets it: a lost
connection ends the reader with ``BinlogConnectionLost``; ``cdc_mysql.keepalive`` then opens a new
reader at the position the streamer last delivered (``connect.keep.alive``), or the engine
restarts the connector from the last acknowledged offset. The dump command is sent here, so both
servers can start from a file position or a GTID set, and MariaDB sends its annotate-rows events
when asked to.
"""

from __future__ import annotations

import logging
import socket
import struct
import warnings
from typing import Any

import pymysql
from pymysql.constants.COMMAND import COM_BINLOG_DUMP
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.gtid import GtidSet

from cdc_mysql.connection import Connection
from cdc_mysql.hot_events import HOT_KINDS, SKIP, read_hot, usable

# mysql-replication warns before every reconnect attempt; cdc refuses those attempts itself.
logging.getLogger("pymysqlreplication").setLevel(logging.ERROR)
# Its control connection passes PyMySQL's old ``db`` argument; nothing a cdc user can act on.
warnings.filterwarnings("ignore", message="'db' is deprecated, use 'database'", category=DeprecationWarning)

#: MariaDB's BINLOG_SEND_ANNOTATE_ROWS_EVENT dump flag.
_SEND_ANNOTATE_ROWS = 0x02
#: MySQL's COM_BINLOG_DUMP_GTID command byte.
COM_BINLOG_DUMP_GTID = 0x1E


class BinlogConnectionLost(Exception):
    """The replication connection broke; cdc restarts from the last acknowledged offset instead of reconnecting."""


class BinlogStartPosition:
    """Where a dump starts: a file and position, or a GTID set (MySQL ``uuid:1-5`` or MariaDB ``0-1-5``)."""

    def __init__(self, file: str | None = None, pos: int | None = None, gtids: str | None = None):
        self.file = file
        self.pos = pos
        self.gtids = gtids

    def __repr__(self) -> str:
        return f"gtids {self.gtids}" if self.gtids is not None else f"{self.file}:{self.pos}"


def tune_socket(sock: socket.socket, keepalive: bool, nongraceful: bool) -> None:
    """TCP keep-alive on the replication socket; ``use.nongraceful.disconnect``: SO_LINGER 0, so closing the
    socket resets the connection at once instead of leaving it in FIN_WAIT/TIME_WAIT on a stale peer."""
    if keepalive:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    if nongraceful:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


class CdcBinLogStreamReader(BinLogStreamReader):
    """A BinLogStreamReader that connects exactly once, from ``start``, with MariaDB annotate-rows if asked."""

    #: Parse a TABLE_MAP event only for a table id not in ``table_map`` yet (mysql-replication's
    #: ``freeze_schema``). Every transaction repeats its tables' TABLE_MAP events, and parsing one
    #: (columns, optional metadata) was 40% of the connector thread's time with single-row
    #: transactions (py-spy, benchmarks/latency.py). A table id names one table definition for the
    #: server's lifetime (an ALTER or a reopened table gets a new id), so the first parse stays right;
    #: the streamer still empties ``table_map`` at each DDL statement and binlog rotation (a restarted
    #: server writes a new file and numbers its tables again), so a stale entry never outlives either.
    #: Off with ``binlog.buffer.size`` > 0: Debezium's buffer counts every TABLE_MAP event towards its
    #: capacity, and a skipped one never reaches cdc's (cdc_mysql.lookahead) to be counted.
    freeze_table_maps = True

    def __init__(self, connection_settings: dict[str, Any], server_id: int, start: BinlogStartPosition, *,
                 mariadb: bool, annotate_rows: bool, heartbeat_seconds: float, keepalive: bool = False,
                 nongraceful: bool = False, freeze_table_maps: bool | None = None, **kwargs: Any):
        super().__init__(
            connection_settings, server_id, blocking=True, resume_stream=True, log_file=start.file,
            log_pos=start.pos, is_mariadb=mariadb, annotate_rows_event=annotate_rows,
            slave_heartbeat=heartbeat_seconds, enable_logging=False, pymysql_wrapper=Connection,
            freeze_schema=self.freeze_table_maps if freeze_table_maps is None else freeze_table_maps and
            self.freeze_table_maps, **kwargs,
        )
        self.cdc_start = start
        self.cdc_mariadb = mariadb
        self.cdc_annotate_rows = annotate_rows
        self.cdc_connected_once = False
        self.cdc_keepalive = keepalive
        self.cdc_nongraceful = nongraceful
        #: The fast path for the events of every transaction (``cdc_mysql.hot_events``), where the settings allow it.
        self.cdc_hot = usable(self)

    def connect(self) -> None:
        """Open the replication and control connections now (instead of at the first read)."""
        self._BinLogStreamReader__connect_to_stream()  # type: ignore[attr-defined]
        self._BinLogStreamReader__connect_to_ctl()  # type: ignore[attr-defined]

    def close(self) -> None:
        """Close both connections (also a replication connection that broke while being set up).

        With ``use.nongraceful.disconnect`` the replication socket is dropped without COM_QUIT (its SO_LINGER 0
        turns the close into a reset), so closing a stale connection never waits on the peer."""
        conn = getattr(self, "_stream_connection", None)
        if self.cdc_nongraceful and conn is not None and conn.open:
            conn._force_close()
        try:
            super().close()
        except pymysql.err.Error:  # already closed
            pass
        if conn is not None and conn.open:
            conn._force_close()

    @property
    def use_checksum(self) -> bool:
        """True if events end with a CRC32 checksum (known once connected)."""
        return bool(self._BinLogStreamReader__use_checksum)  # type: ignore[attr-defined]

    @property
    def stream_connection(self) -> pymysql.connections.Connection | None:
        """The replication connection (for shutting it down from another thread)."""
        return getattr(self, "_stream_connection", None)

    def _BinLogStreamReader__connect_to_stream(self) -> None:  # noqa: N802 - overrides the private method
        """Open the replication connection and send the dump command; a second call means a reconnect: refuse it."""
        if self.cdc_connected_once:
            raise BinlogConnectionLost("the replication connection was lost")
        self.cdc_connected_once = True
        settings = self._BinLogStreamReader__connection_settings  # type: ignore[attr-defined]
        conn = self._stream_connection = self.pymysql_wrapper(**settings)
        if conn._sock is not None and (self.cdc_keepalive or self.cdc_nongraceful):
            tune_socket(conn._sock, self.cdc_keepalive, self.cdc_nongraceful)
        use_checksum = self._BinLogStreamReader__checksum_enabled()  # type: ignore[attr-defined]
        self._BinLogStreamReader__use_checksum = use_checksum  # type: ignore[attr-defined]
        with conn.cursor() as cur:
            if use_checksum:
                cur.execute("SET @master_binlog_checksum = @@global.binlog_checksum")
            if self.slave_heartbeat:
                cur.execute("SET @master_heartbeat_period = %s", (int(self.slave_heartbeat * 1_000_000_000),))
            cur.execute("SET @mariadb_slave_capability = 4")
            if self.cdc_mariadb and self.cdc_start.gtids is not None:
                cur.execute("SET @slave_connect_state = %s", (self.cdc_start.gtids,))
                cur.execute("SET @slave_gtid_strict_mode = 0")
                cur.execute("SET @slave_gtid_ignore_duplicates = 0")
        self._register_slave()
        server_id = self._BinLogStreamReader__server_id  # type: ignore[attr-defined]
        flags = _SEND_ANNOTATE_ROWS if self.cdc_mariadb and self.cdc_annotate_rows else 0
        start = self.cdc_start
        if start.gtids is not None and not self.cdc_mariadb:
            gtid_set = GtidSet(start.gtids)
            header = 2 + 4 + 4 + 8 + 4
            prelude = struct.pack("<i", header + gtid_set.encoded_length) + bytes([COM_BINLOG_DUMP_GTID])
            prelude += struct.pack("<H", 0x04) + struct.pack("<I", server_id) + struct.pack("<I", 3) + b"\0\0\0"
            prelude += struct.pack("<Q", 4) + struct.pack("<I", gtid_set.encoded_length) + gtid_set.encoded()
        else:
            name = b"" if start.gtids is not None else (start.file or "").encode()
            pos = 4 if start.gtids is not None else int(start.pos or 4)
            prelude = struct.pack("<i", len(name) + 11) + bytes([COM_BINLOG_DUMP])
            prelude += struct.pack("<I", pos) + struct.pack("<H", flags) + struct.pack("<I", server_id) + name
        conn._write_bytes(prelude)
        conn._next_seq_id = 1
        self._BinLogStreamReader__connected_stream = True  # type: ignore[attr-defined]

    def fetchone(self):  # type: ignore[override]
        """The next event; a lost connection raises BinlogConnectionLost instead of reconnecting."""
        try:
            if not self.cdc_hot or not self._BinLogStreamReader__connected_stream:  # type: ignore[attr-defined]
                return super().fetchone()
            return self._fetch_hot()
        except (pymysql.err.OperationalError, pymysql.err.InterfaceError, OSError, struct.error) as e:
            if isinstance(e, pymysql.err.OperationalError) and e.args and e.args[0] == 1236:
                raise  # the server refused the position: not a lost connection
            raise BinlogConnectionLost(f"the replication connection was lost: {e}") from None

    def _fetch_hot(self) -> Any:
        """``fetchone`` with the events of every transaction made by ``cdc_mysql.hot_events``, the rest by the library."""
        conn = self._stream_connection
        kinds = HOT_KINDS
        read = pymysql.connections.Connection._read_packet
        while True:
            pkt = read(conn)
            data = pkt._data
            if data[0] == 0 and len(data) > 20 and data[5] in kinds:
                ev = read_hot(self, pkt, data, data[5])
                if ev is SKIP:
                    continue
                if ev is not None:
                    return ev
            conn.hold(pkt)  # anything else: the library reads it again from the connection
            return super().fetchone()
