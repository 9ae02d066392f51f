"""Example cdc plugins, registered through the ``cdc`` entry-point group like any third-party package."""

from __future__ import annotations

from cdc_core.hookspecs import hookimpl


@hookimpl
def register_converters() -> list[type]:
    """The ``boolean-words`` converter."""
    from cdc_example_plugins.converter import BooleanWordsConverter

    return [BooleanWordsConverter]


@hookimpl
def register_snapshotters() -> list[type]:
    """The ``export`` snapshotter."""
    from cdc_example_plugins.snapshotter import ExportSnapshotter

    return [ExportSnapshotter]
