"""The contracts plugins implement: connectors, sinks, serializers, offset and schema history stores."""
