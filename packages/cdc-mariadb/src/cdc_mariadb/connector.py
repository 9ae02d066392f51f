"""The MariaDB connector: the MySQL connector with MariaDB's names, GTIDs and annotate-rows events."""

from __future__ import annotations

from typing import ClassVar

from cdc_core.schema import Schema
from cdc_mysql.connector import MySqlConnector
from cdc_mysql.flavor import Flavor
from cdc_mysql.source import source_schema

from cdc_mariadb.flavor import MARIADB


class MariaDbConnector(MySqlConnector):
    """Debezium's MariaDB connector."""

    flavor: ClassVar[Flavor] = MARIADB
    name: ClassVar[str] = MARIADB.name
    class_names: ClassVar[tuple[str, ...]] = MARIADB.class_names
    source_schema: ClassVar[Schema] = source_schema(MARIADB)
