"""The transform and predicate contracts: Kafka Connect's single message transforms, on cdc's records."""

from __future__ import annotations

from typing import ClassVar, Protocol, runtime_checkable

from cdc_core.config import Config
from cdc_core.events import ChangeRecord


@runtime_checkable
class Transform(Protocol):
    """Changes, reroutes or drops one record before it is serialized (``transforms=<alias>,...``).

    A transform sees the whole record: ``topic``, ``key`` and ``value`` (JSON-ready payloads, as the
    converter will write them), ``key_schema`` and ``value_schema`` (``cdc_core.schema.Schema``) and
    ``headers`` (with ``header_schemas``: a transform that sets a header gives its Connect schema with
    ``record.set_header_schemas({name: schema})``, None for none, as Kafka's ``headers.add(name, value,
    schema)``; the default header converter writes it). It returns the record (the same object changed,
    or a new one) or None to drop it.
    It must not change ``offset`` or ``partition``: the core commits a dropped record's offset too.
    Build schemas once per input schema (cache by identity), never per record.
    """

    #: A short name usable as ``transforms.<alias>.type`` (e.g. ``unwrap``).
    name: ClassVar[str]
    #: The Debezium / Kafka Connect class names it answers to (``io.debezium.transforms.ExtractNewRecordState``).
    class_names: ClassVar[tuple[str, ...]]

    def __init__(self, config: Config) -> None:
        """``config`` holds the ``transforms.<alias>.*`` properties, prefix removed (``type`` included).

        Raise ``ConfigError`` naming the property for a bad option, so the start is refused.
        """

    def apply(self, record: ChangeRecord) -> ChangeRecord | None:
        """The transformed record, or None to drop it."""


@runtime_checkable
class Predicate(Protocol):
    """A condition on a record that decides whether a transform applies (``predicates=<alias>,...``)."""

    #: A short name usable as ``predicates.<alias>.type``.
    name: ClassVar[str]
    #: The Kafka Connect class names it answers to (``org.apache.kafka.connect.transforms.predicates.TopicNameMatches``).
    class_names: ClassVar[tuple[str, ...]]

    def __init__(self, config: Config) -> None:
        """``config`` holds the ``predicates.<alias>.*`` properties, prefix removed."""

    def test(self, record: ChangeRecord) -> bool:
        """True if the record matches."""
