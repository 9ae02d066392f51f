"""cdc YugabyteDB connector: YugabyteDB's logical-replication differences on top of cdc-postgres."""

from __future__ import annotations
