"""The plugin hooks: one small function per kind of plugin. Built-ins implement them too."""

from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("cdc")
hookimpl = pluggy.HookimplMarker("cdc")


@hookspec
def register_connectors() -> list[type]:
    """Return connector classes (see ``cdc_core.spi.connector.Connector``).

    Each class has ``name`` (the short ``connector.class`` value, e.g. ``postgres``) and
    ``class_names`` (Debezium's class names it answers to). A ``cdc_core.plugins.LazyPlugin`` may stand
    in for a class whose module is costly to import: it is imported only when configured.
    """


@hookspec
def register_sinks() -> list[type]:
    """Return sink classes (see ``cdc_core.spi.sink.Sink``), each with a ``name`` used as ``debezium.sink.type``."""


@hookspec
def register_offset_stores() -> list[type]:
    """Return offset store classes (see ``cdc_core.spi.offsets.OffsetStore``), each with ``name`` and ``class_names``."""


@hookspec
def register_schema_history_stores() -> list[type]:
    """Return schema history store classes (see ``cdc_core.spi.history.SchemaHistoryStore``)."""


@hookspec
def register_serializers() -> list[type]:
    """Return serializer classes (see ``cdc_core.spi.serializer.Serializer``), each with a ``name`` used as format."""


@hookspec
def register_transforms() -> list[type]:
    """Return transform classes (see ``cdc_core.spi.transform.Transform``), each with ``name`` and ``class_names``
    used as ``transforms.<alias>.type``."""


@hookspec
def register_predicates() -> list[type]:
    """Return predicate classes (see ``cdc_core.spi.transform.Predicate``), each with ``name`` and ``class_names``
    used as ``predicates.<alias>.type``."""


@hookspec
def register_demos() -> list[tuple[str, object]]:
    """Return ``(name, function)`` pairs for ``cdc demo [NAME]``; the function takes no arguments and returns an exit code."""


@hookspec
def register_converters() -> list[type]:
    """Return custom converter classes (see ``cdc_core.spi.converter.CustomConverter``), each with a ``name``."""


@hookspec
def register_snapshotters() -> list[type]:
    """Return Snapshotter classes (see ``cdc_core.snapshot.spi.Snapshotter``) for ``snapshot.mode=custom``."""


@hookspec
def register_snapshot_queries() -> list[type]:
    """Return SnapshotQuery classes for ``snapshot.query.mode=custom``."""


@hookspec
def register_snapshot_locks() -> list[type]:
    """Return SnapshotLock classes for ``snapshot.locking.mode=custom``."""


@hookspec
def register_signal_channels() -> list[type]:
    """Return SignalChannel classes (see ``cdc_core.signals.spi.SignalChannel``), each with a ``name`` used in
    ``signal.enabled.channels``."""


@hookspec
def register_notification_channels() -> list[type]:
    """Return NotificationChannel classes (see ``cdc_core.notifications.spi.NotificationChannel``), each with a
    ``name`` used in ``notification.enabled.channels``."""


@hookspec
def register_topic_naming_strategies() -> list[type]:
    """Return TopicNamingStrategy subclasses (see ``cdc_core.topics.TopicNamingStrategy``), each with a ``name``
    (and optionally ``class_names``) used as ``topic.naming.strategy``."""


@hookspec
def register_cli_commands(subparsers: object) -> None:
    """Add subcommands to the ``cdc`` command: ``subparsers`` is its argparse subparsers object.

    Each subcommand sets ``func`` (``set_defaults(func=...)``): a function of the parsed arguments
    that returns the exit code. Example: ``cdc ddl apply`` from the MySQL plugin.
    """
