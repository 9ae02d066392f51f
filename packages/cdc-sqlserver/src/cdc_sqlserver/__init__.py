"""The SQL Server connector: Debezium's change-table polling, on pyodbc."""
