"""Sinks: where serialized records go."""
