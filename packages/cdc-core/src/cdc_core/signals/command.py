"""``cdc signal CONFIG TYPE [DATA]``: hand a running ``cdc run`` a signal through its signal file.

The transport is the ``file`` signal channel: the command appends one JSON line to
``signal.file`` (under a lock, in one write), and the running process picks it up within
``signal.poll.interval.ms`` and remembers the position it dispatched, so the signal runs once
even across restarts. It works whether or not the process is running at that moment (it runs
the signal when it next starts), needs no network port, and the file's permissions decide who
may signal. Use an absolute ``signal.file`` so both processes mean the same file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import orjson

from cdc_core.signals.channels import append_signal
from cdc_core.signals.config import SIGNAL_CHANNELS, SIGNAL_FILE

EXIT_OK, EXIT_FAILED, EXIT_CONFIG = 0, 1, 2


def cmd_signal(args: argparse.Namespace) -> int:
    """Append the signal to the configuration's ``signal.file``."""
    from cdc_core.app import load_application
    from cdc_core.errors import CdcError

    try:
        server = load_application(args.config).server
        source = server.source
        channels = source.get(SIGNAL_CHANNELS) or []
        path = source.get(SIGNAL_FILE)
    except CdcError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_CONFIG
    if "file" not in channels:
        print(f"error: {server.source_name(SIGNAL_CHANNELS.name)} of {args.config} does not include the file channel, "
              f"so a running connector would not read the signal; add file to it (and set "
              f"{server.source_name(SIGNAL_FILE.name)})", file=sys.stderr)
        return EXIT_CONFIG
    data: object = None
    if args.data is not None:
        try:
            data = orjson.loads(args.data)
        except orjson.JSONDecodeError as e:
            print(f"error: DATA is not JSON: {e}", file=sys.stderr)
            return EXIT_CONFIG
    try:
        signal_id = append_signal(path, args.type, data, args.id)
    except OSError as e:
        print(f"error: cannot append to signal file {path}: {e.strerror}", file=sys.stderr)
        return EXIT_FAILED
    print(f"signal {signal_id} ({args.type}) appended to {Path(path).resolve()}")
    return EXIT_OK


def add_signal_command(subparsers: argparse._SubParsersAction) -> None:
    """Register ``cdc signal``."""
    p = subparsers.add_parser("signal", help="send a signal (e.g. execute-snapshot) to a running cdc run",
                              description=__doc__.splitlines()[0])
    p.add_argument("config", help="the configuration file of the running connector")
    p.add_argument("type", help="execute-snapshot, stop-snapshot, pause-snapshot, resume-snapshot or log")
    p.add_argument("data", nargs="?", help='the signal data as JSON, e.g. \'{"data-collections": ["public.t"]}\'')
    p.add_argument("--id", help="the signal id (default: a new UUID)")
    p.set_defaults(func=cmd_signal)
