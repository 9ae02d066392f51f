"""Fixtures shared by every package's tests: one throwaway PostgreSQL server per session."""

pytest_plugins = ["cdc_postgres.testing"]
