"""MariaDB's log position: the MySQL one (``cdc_mysql.position``; ``@@global.gtid_binlog_pos`` for GTIDs)."""

from __future__ import annotations

from cdc_mysql.position import MySqlLogPosition

#: The capability, found by ``cdc_core.spi.position.log_position_for``.
log_position = MySqlLogPosition
