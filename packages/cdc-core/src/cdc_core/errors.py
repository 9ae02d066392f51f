"""The exceptions cdc raises, each with a message a user can act on."""

from __future__ import annotations


class CdcError(Exception):
    """Base class of every error cdc raises on purpose."""


class ConfigError(CdcError):
    """The configuration is invalid; ``problems`` lists each bad property with its reason."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("invalid configuration:\n" + "\n".join(f"  {p}" for p in self.problems))

    def __reduce__(self) -> tuple[type, tuple[list[str]]]:
        """Pickled with its problems (a worker process's error reaches the engine so), not with its message text,
        which __init__ would split into one problem per character."""
        return type(self), (self.problems,)


class ConnectorError(CdcError):
    """The connector cannot go on; the message says why and how to fix it."""


def offsets_ahead(config: object, stored: str, current: str, server: str, then: str) -> ConnectorError:
    """The error for stored offsets ahead of the server's log: they belong to another server or were edited.

    ``stored``/``current`` name both positions (``LSN 0/5000``, ``binlog position f:4``), ``server``
    says which server, ``then`` what is (not) done and how to start over.
    """
    from cdc_core.config import common  # here: errors is imported by the config package

    where = config.get(common.OFFSET_FILE)  # type: ignore[attr-defined]
    source = f"offsets file {where}" if where else "the stored offsets"
    return ConnectorError(
        f"{source} says streaming stopped at {stored}, ahead of the current {current} of {server}: these offsets "
        f"do not belong to this server (copied from another server or edited). {then}")


class RetriableError(ConnectorError):
    """A failure worth retrying (e.g. the database is unreachable), per ``errors.max.retries``."""


class UnknownHostError(RetriableError):
    """The server's host name does not resolve (the name server says there is no such name).

    Before the connector has ever started this is a configuration error and stops the engine at
    once; once it has run, it is a name-service hiccup during a reconnect and is retried.
    """


class OffsetStoreError(CdcError):
    """The offset store cannot be read or written (e.g. a corrupt offsets file)."""


class SchemaHistoryError(CdcError):
    """The schema history store cannot be read or written."""


class SinkError(CdcError):
    """A sink failed to write a batch; nothing of that batch is acknowledged."""


class PluginError(CdcError):
    """A plugin named in the configuration is missing or broken."""
