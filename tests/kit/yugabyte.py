"""The kit's YugabyteDB fixture: the YugabyteDB connector on the PostgreSQL stand-in (pgoutput), one database per test.

YugabyteDB speaks PostgreSQL's replication protocol, so the scenarios run the YugabyteDB connector's
own code (its names, checks, slot and stream handling) against the session's throwaway PostgreSQL;
``plugin.name=pgoutput`` because PostgreSQL has no yboutput. Only ``test_kit_stream`` runs it
(``scenarios``): the others would add about 80 s of CI time for paths that are PostgreSQL's own.
"""

from __future__ import annotations

from typing import Any, ClassVar

from kit.contract import Workdir
from kit.postgres import PostgresFixture


class YugabyteFixture(PostgresFixture):
    """``ConnectorFixture`` for the YugabyteDB connector on ``EmbeddedPostgres``."""

    name: ClassVar[str] = "yugabyte"
    #: The kit modules this fixture joins (``kit.plugin`` deselects it elsewhere).
    scenarios: ClassVar[tuple[str, ...]] = ("test_kit_stream",)

    def properties(self, workdir: Workdir, **source: Any) -> dict[str, Any]:
        """PostgreSQL's properties with the YugabyteDB connector class and pgoutput."""
        props = super().properties(workdir, **source)
        props["debezium.source.connector.class"] = "io.debezium.connector.postgresql.YugabyteDBConnector"
        props.setdefault("debezium.source.plugin.name", "pgoutput")
        return props
