"""Serializers: records to bytes (the converters of Kafka Connect)."""
