"""SQL Server Agent's status check (``database.sqlserver.agent.status.query``), as Debezium 2.7.4 runs it.

Debezium's SqlServerStreamingChangeEventSource runs the query when a poll finds no maximum LSN
(``sys.fn_cdc_get_max_lsn()`` is NULL: nothing captured yet, or the agent's capture job does not
run), once until a maximum LSN shows up again: a false answer logs an error ("No maximum LSN
recorded in the database; SQL Server Agent is not running"), a failing query two warnings (the
second naming the error), and an answer of other than one row fails the connector
(SqlServerConnection.isAgentRunning's single-result mapper). ``[#db]`` in the query is the database's
name. cdc also runs the query once at start, warning when the agent is not running (Debezium does
not): a stopped agent otherwise goes unnoticed while older changes give a maximum LSN.
"""

from __future__ import annotations

from typing import Any

from cdc_core.errors import ConnectorError
from cdc_sqlserver import config as msc
from cdc_sqlserver.driver_errors import first_line, is_connection_error

NOT_RUNNING = "No maximum LSN recorded in the database; SQL Server Agent is not running"
CANNOT_TELL = ("No maximum LSN recorded in the database; this may happen if there are no changes recorded in the "
               "change table yet or low activity database where the cdc clean up job periodically clears entries "
               "from the cdc tables. Otherwise, this may be an indication that the SQL Server Agent is not running. "
               "You should follow the documentation on how to configure SQL Server Agent running status query.")


class AgentCheck:
    """One database's agent status query, and Debezium's once-per-gap check of it while streaming."""

    def __init__(self, query: str, db: str, log: Any):
        """``query`` as configured, ``#db`` in it standing for the database's name."""
        self.query = query.replace("#db", db)
        self.db = db
        self.log = log
        #: Debezium's ``checkAgent``: ask at the next poll without a maximum LSN.
        self.due = True

    def running(self, conn: Any) -> bool:
        """The query's one value as a boolean; any other number of rows is a ConnectorError naming the property."""
        rows = conn.execute(self.query).fetchmany(2)
        if len(rows) != 1:
            raise ConnectorError(f"{msc.AGENT_STATUS_QUERY.name} returned {len(rows) if rows else 'no'} rows on "
                                 f"database {self.db!r}: SQL Server Agent running status query must return exactly "
                                 f"one value (query: {self.query})")
        return _truthy(rows[0][0])

    def at_start(self, conn: Any, address: str) -> None:
        """Warn, in one line, when the agent is not running (or the query cannot tell): no change is captured until it is."""
        try:
            up = self.running(conn)
        except ConnectorError as e:
            self.log.warning("cannot tell whether SQL Server Agent is running: %s", e)
            return
        except Exception as e:
            if is_connection_error(e):
                raise
            self.log.warning("cannot tell whether SQL Server Agent is running (%s); the default %s needs VIEW "
                             "SERVER STATE", first_line(e), msc.AGENT_STATUS_QUERY.name)
            return
        if not up:
            self.log.warning("SQL Server Agent is not running on %s: its capture job fills the change tables, so "
                             "no change is streamed until it runs", address)

    def no_max_lsn(self, conn: Any) -> None:
        """A poll found no maximum LSN: ask once (until ``max_lsn_seen``), logging as Debezium does."""
        if not self.due:
            return
        try:
            if not self.running(conn):
                self.log.error(NOT_RUNNING)
        except ConnectorError:
            raise
        except Exception as e:
            if is_connection_error(e):
                raise
            self.log.warning(CANNOT_TELL)
            self.log.warning("Cannot query the status of the SQL Server Agent: %s", first_line(e))
        self.due = False

    def max_lsn_seen(self) -> None:
        """A poll found a maximum LSN: the next gap asks again."""
        self.due = True


def _truthy(value: Any) -> bool:
    """JDBC's ``getBoolean``: numbers are true unless 0, strings true when "1" or "true"."""
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true")
    return bool(value)

