"""Pytest fixtures for the SQL Server stand-in: a CDC-enabled database on the session's throwaway PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cdc_sqlserver import odbc
from cdc_sqlserver.standin import dbapi
from cdc_sqlserver.standin.server import StandIn

CUSTOMERS = """CREATE TABLE dbo.customers (
  id INTEGER IDENTITY(1001,1) NOT NULL PRIMARY KEY,
  first_name VARCHAR(255) NOT NULL,
  last_name VARCHAR(255) NOT NULL,
  email VARCHAR(255) NOT NULL UNIQUE
)"""


@pytest.fixture
def standin(pg_server, pg_db) -> Iterator[StandIn]:
    """A stand-in database (``sys`` objects only; the test enables CDC), its connections routed to it."""
    saved = odbc.CONNECT, odbc.DRIVERS
    dbapi.install()
    server = StandIn(pg_server, pg_db)
    try:
        yield server
    finally:
        server.agent.stop()
        odbc.install(*saved)


@pytest.fixture
def inventory(standin: StandIn) -> StandIn:
    """The chapter's ``customers`` table with four rows, CDC enabled on the database and the table, the agent running."""
    standin.create_table(CUSTOMERS)
    standin.execute("INSERT INTO dbo.customers (first_name, last_name, email) VALUES "
                    "('Sally', 'Thomas', 'sally.thomas@acme.com'), ('George', 'Bailey', 'gbailey@foobar.com'), "
                    "('Edward', 'Walker', 'ed@walker.com'), ('Anne', 'Kretchmar', 'annek@noanswer.org')")
    standin.enable_db()
    standin.enable_table("dbo", "customers")
    standin.agent.start()
    return standin
