"""Fixtures shared by every package's tests: one throwaway PostgreSQL and one MariaDB server per session."""

pytest_plugins = ["cdc_postgres.testing", "cdc_mysql.testing", "kit.plugin"]
