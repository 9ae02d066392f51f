"""Offset and schema history stores: files and memory."""
