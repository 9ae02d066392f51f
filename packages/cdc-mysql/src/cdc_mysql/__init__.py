"""cdc MySQL connector: binlog streaming on mysql-replication, sqlglot DDL -> schema history."""
