"""The ``cdc`` command: run, validate, offsets show, demo."""

from __future__ import annotations

import argparse
import logging
import signal
import sys

import orjson

from cdc_core.app import load_application
from cdc_core.errors import CdcError, ConfigError
from cdc_core.logs import configure_logging
from cdc_core.progress import SnapshotProgress

EXIT_OK, EXIT_FAILED, EXIT_CONFIG = 0, 1, 2

log = logging.getLogger("cdc.cli")


def _print_problems(problems: list[str]) -> int:
    print("invalid configuration:", file=sys.stderr)
    for p in problems:
        print(f"  {p}", file=sys.stderr)
    return EXIT_CONFIG


def cmd_validate(args: argparse.Namespace) -> int:
    """Check a configuration without starting anything: errors, refused properties, and those accepted without effect."""
    try:
        app = load_application(args.config)
        report = app.report()
    except ConfigError as e:
        return _print_problems(e.problems)
    if report.errors:
        _print_problems(report.errors)
    if report.refused:
        print("refused (documented, but cdc does not implement them and ignoring them would change the data):",
              file=sys.stderr)
        for line in report.refused:
            print(f"  {line}", file=sys.stderr)
    if report.ignored:
        print("accepted, no effect in cdc:")
        for name in report.ignored:
            reason = report.reasons.get(name)
            print(f"  {name}" + (f" ({reason})" if reason else ""))
    if report.problems:
        return EXIT_CONFIG
    print(f"{args.config}: configuration is valid")
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    """Run the connector into the configured sink until SIGTERM/SIGINT, then drain, commit and exit 0."""
    engine = None
    stop_requested = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop_requested
        log.info("received %s: draining, committing offsets and stopping", signal.Signals(signum).name)
        stop_requested = True
        if engine is not None:
            engine.stop()

    # Installed first, so a signal during start-up still ends in a clean stop.
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        engine = load_application(args.config).engine()
    except ConfigError as e:
        return _print_problems(e.problems)
    except CdcError as e:
        log.error("%s", e)
        return EXIT_FAILED
    if stop_requested:
        return EXIT_OK
    progress = SnapshotProgress(engine.metrics.snapshot).start()
    try:
        engine.run()
    except CdcError as e:
        log.error("%s", e)
        return EXIT_FAILED
    finally:
        progress.stop()
    return EXIT_OK


def cmd_offsets_show(args: argparse.Namespace) -> int:
    """Print the stored offsets of a configuration as JSON."""
    try:
        store = load_application(args.config).offset_store()
        entries = store.all()
    except ConfigError as e:
        return _print_problems(e.problems)
    except CdcError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_FAILED
    doc = [{"partition": p, "offset": o} for p, o in entries]
    sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
    return EXIT_OK


def cmd_offsets_copy(args: argparse.Namespace) -> int:
    """Copy the stored offsets of one configuration into the offset store of another (file <-> Kafka, ...)."""
    try:
        source = load_application(args.source).offset_store()
        entries = source.all()
        source.close()
        target = load_application(args.target).offset_store()
        target.commit(entries)
        target.close()
    except ConfigError as e:
        return _print_problems(e.problems)
    except CdcError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_FAILED
    print(f"copied {len(entries)} offset(s) from {args.source} to {args.target}")
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    """Run a demo registered by a plugin (``postgres`` by default)."""
    from cdc_core.plugins import registry

    demos: dict[str, object] = {}
    for impl in registry().manager.hook.register_demos.get_hookimpls():
        try:
            demos.update(dict(impl.function() or []))
        except Exception as e:  # a broken plugin only loses its demo
            log.warning("cdc plugin %r failed to register its demo: %s", impl.plugin_name, e)
    func = demos.get(args.name)
    if func is None:
        available = ", ".join(sorted(demos)) or "none (install cdc[postgres])"
        print(f"no demo called {args.name!r}; available: {available}", file=sys.stderr)
        return EXIT_CONFIG
    return int(func() or 0)  # type: ignore[operator]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``cdc`` command."""
    parser = argparse.ArgumentParser(prog="cdc", description="Change data capture with Debezium-format events.")
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="stream a database's changes into the configured sink")
    p.add_argument("config", help="configuration file (.properties, .yaml or .json)")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("validate", help="check a configuration and exit")
    p.add_argument("config")
    p.set_defaults(func=cmd_validate)
    p = sub.add_parser("offsets", help="inspect stored offsets")
    osub = p.add_subparsers(dest="offsets_command", required=True)
    ps = osub.add_parser("show", help="print the stored offsets as JSON")
    ps.add_argument("config")
    ps.set_defaults(func=cmd_offsets_show)
    ps = osub.add_parser("copy", help="copy the stored offsets of SOURCE's offset store into TARGET's (e.g. file -> Kafka)")
    ps.add_argument("source", help="configuration whose offsets are read")
    ps.add_argument("target", help="configuration whose offset store receives them")
    ps.set_defaults(func=cmd_offsets_copy)
    p = sub.add_parser("demo", help="stream a throwaway local database's changes to the terminal")
    p.add_argument("name", nargs="?", default="postgres")
    p.set_defaults(func=cmd_demo)
    _plugin_commands(sub)
    return parser


def _plugin_commands(sub: argparse._SubParsersAction) -> None:
    """Subcommands that plugins add through ``register_cli_commands``; a broken plugin only loses its own."""
    from cdc_core.plugins import registry

    for impl in registry().manager.hook.register_cli_commands.get_hookimpls():
        try:
            impl.function(subparsers=sub)
        except Exception as e:  # noqa: BLE001 - a broken plugin must not take the command down
            log.warning("cdc plugin %r failed to register its commands: %s", impl.plugin_name, e)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``cdc`` command; returns the exit code.

    Whatever goes wrong ends in one clear line and a non-zero exit: an error cdc did not foresee
    is logged with its type and message (its traceback only at DEBUG), never as a bare traceback.
    """
    for stream in (sys.stdout, sys.stderr):
        # A configured name may hold characters the terminal cannot encode: escape them, never fail.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    args = build_parser().parse_args(argv)
    level = args.log_level.upper()
    if not isinstance(logging.getLevelName(level), int):
        print(f"cdc: --log-level {args.log_level!r} is not one of DEBUG, INFO, WARNING, ERROR, CRITICAL", file=sys.stderr)
        return EXIT_CONFIG
    configure_logging(level)
    try:
        return args.func(args)
    except Exception as e:  # noqa: BLE001 - the last line of defence: one line, not a traceback
        log.debug("unexpected error", exc_info=True)
        log.error("unexpected error (%s): %s; run with --log-level DEBUG for details", type(e).__name__,
                  _first_line(e))
        return EXIT_FAILED


def _first_line(e: BaseException) -> str:
    if isinstance(e, UnicodeError):
        # Its text quotes the offending character and its position, which may be part of a secret.
        return f"a text could not be converted ({getattr(e, 'encoding', 'unknown')} codec)"
    return (str(e).strip().splitlines() or [""])[0]


if __name__ == "__main__":
    sys.exit(main())
