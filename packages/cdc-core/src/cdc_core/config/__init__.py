"""Configuration: Debezium property names and defaults from .properties, YAML, JSON or a dict."""

from cdc_core.config.config import Config
from cdc_core.config.fields import ConfigField, Fields
from cdc_core.config.loader import load_file
from cdc_core.config.server import ServerConfig, server_config

__all__ = ["Config", "ConfigField", "Fields", "ServerConfig", "load_file", "server_config"]
