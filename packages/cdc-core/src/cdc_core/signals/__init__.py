"""Signals: channels, the actions they trigger, and the hook that runs them in the change stream."""

from cdc_core.signals.spi import SignalChannel, SignalRecord

__all__ = ["SignalChannel", "SignalRecord"]
