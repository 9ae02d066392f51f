"""A stand-in for SQL Server's CDC, for tests: a throwaway PostgreSQL holding the ``cdc``/``sys`` objects.

``server.StandIn`` builds them on a PostgreSQL database, ``agent.CaptureAgent`` fills the change
tables from the WAL as SQL Server Agent's capture job does, and ``dbapi`` is the pyodbc-shaped
connection that translates the connector's T-SQL (sqlglot) before PostgreSQL runs it. Nothing
here is used in production.
"""
