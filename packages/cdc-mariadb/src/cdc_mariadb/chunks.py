"""MariaDB's chunked snapshot: the MySQL one (``cdc_mysql.chunks``) for the MariaDB connector.

Chunk readers learn their binlog position from ``binlog_snapshot_file``/``_position``, which MariaDB
keeps consistent with ``START TRANSACTION WITH CONSISTENT SNAPSHOT``: no lock per chunk.
"""

from __future__ import annotations

from typing import ClassVar

from cdc_mysql.chunks import MySqlSnapshotChunks


class MariaDbSnapshotChunks(MySqlSnapshotChunks):
    """The SnapshotChunks capability of the MariaDB connector."""

    connector_module: ClassVar[str] = "cdc_mariadb.connector"
    connector_name: ClassVar[str] = "MariaDbConnector"


#: The capability, found by ``cdc_core.spi.chunks.snapshot_chunks_for``.
snapshot_chunks = MariaDbSnapshotChunks
