"""YugabyteDB's log position (Trigger.AvailableNow): PostgreSQL's, read with YugabyteDB's defaults.

PostgreSQL's WAL insert position is what a stand-in has; on YugabyteDB an LSN counts within one
slot, so this capability is verified on the PostgreSQL stand-in only.
"""

from __future__ import annotations

from cdc_core.config import Config
from cdc_postgres.position import PostgresLogPosition

from cdc_yugabyte.config import for_postgres


class YugabyteLogPosition(PostgresLogPosition):
    """The LogPosition capability of the YugabyteDB connector."""

    def __init__(self, config: Config):
        super().__init__(for_postgres(config))


#: The capability, found by ``cdc_core.spi.position.log_position_for``.
log_position = YugabyteLogPosition
