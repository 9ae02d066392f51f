"""Throwaway message brokers for the sink tests: each a real server process on a free port of 127.0.0.1."""
