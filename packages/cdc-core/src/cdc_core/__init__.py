"""cdc core: change data capture with Debezium-format events, without a JVM.

The public API: ``Engine`` runs a connector into a handler or sink; ``Config`` holds properties.
"""

from cdc_core.config import Config
from cdc_core.engine import Engine
from cdc_core.events import ChangeRecord, RawChange

__all__ = ["ChangeRecord", "Config", "Engine", "RawChange"]
__version__ = "0.1.0"
