"""Generic support for stand-ins: a PostgreSQL hosting another database's CDC objects, for tests only.

``decoding`` parses the ``test_decoding`` feed a stand-in's capture agent reads committed
transactions from (cdc-sqlserver's and cdc-db2's agents both use it).
"""
