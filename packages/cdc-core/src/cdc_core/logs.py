"""Logging with the connector's type, name and context on every record."""

from __future__ import annotations

import logging
import sys
from typing import Any

FORMAT = "%(asctime)s %(levelname)-5s [%(connector_type)s|%(connector_name)s|%(context)s] %(name)s: %(message)s"


class ConnectorLogger(logging.LoggerAdapter):
    """A logger adapter that stamps records with ``connector_type``, ``connector_name`` and ``context``."""

    def process(self, msg: Any, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        kwargs["extra"] = {**self.extra, **kwargs.get("extra", {})}
        return msg, kwargs

    def with_context(self, context: str) -> ConnectorLogger:
        """The same logger with another context (e.g. ``snapshot`` or ``streaming``)."""
        return ConnectorLogger(self.logger, {**self.extra, "context": context})


def connector_logger(name: str, connector_type: str, connector_name: str, context: str = "engine") -> ConnectorLogger:
    """A logger for ``name`` carrying the connector's type, name and context."""
    return ConnectorLogger(
        logging.getLogger(name),
        {"connector_type": connector_type, "connector_name": connector_name, "context": context},
    )


class _Defaults(logging.Filter):
    """Fills in the connector fields for records logged without them."""

    def filter(self, record: logging.LogRecord) -> bool:
        for attr in ("connector_type", "connector_name", "context"):
            if not hasattr(record, attr):
                setattr(record, attr, "-")
        return True


def configure_logging(level: str | int = "INFO") -> None:
    """Send cdc's logs to stderr with the connector fields in every line."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_Defaults())
    handler.setFormatter(logging.Formatter(FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
