"""Registers the MariaDB connector through cdc's plugin hooks."""

from __future__ import annotations
