"""The throwaway MariaDB: binlog settings, fresh databases, restart."""

from __future__ import annotations


def test_server_has_a_row_binlog_with_full_images(mariadb_server):
    """The fixture's server logs every row change in full, with full metadata."""
    rows = dict(mariadb_server.execute("SHOW GLOBAL VARIABLES WHERE Variable_name IN "
                                       "('log_bin', 'binlog_format', 'binlog_row_image', 'binlog_row_metadata')"))
    assert rows == {"log_bin": "ON", "binlog_format": "ROW", "binlog_row_image": "FULL", "binlog_row_metadata": "FULL"}
    assert mariadb_server.port != 3306


def test_each_test_gets_its_own_database(mariadb_server, mariadb_db):
    """``mariadb_db`` is an empty database on the session server."""
    assert mariadb_server.execute("SHOW TABLES", database=mariadb_db) == []
    mariadb_server.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=mariadb_db)
    assert mariadb_server.execute("SHOW TABLES", database=mariadb_db) == [("t",)]
