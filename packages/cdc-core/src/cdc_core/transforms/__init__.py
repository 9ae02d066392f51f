"""Kafka Connect single message transforms and predicates on cdc's records (``transforms=``, ``predicates=``).

``chain`` builds the configured chain; each other module is one transform or predicate.
"""
