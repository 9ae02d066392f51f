"""The Db2 connector: Debezium's polling of ASN SQL Replication change-data tables, on ibm_db."""
