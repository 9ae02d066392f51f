"""Registers the MySQL connector and the ``cdc ddl`` command through cdc's plugin hooks."""

from __future__ import annotations
