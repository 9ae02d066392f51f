"""The conformance suite against the real Debezium (see harness.py)."""
