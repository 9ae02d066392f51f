"""The transform chain: ``transforms=a,b`` with ``predicates=p``, applied to each batch of records.

Kafka Connect's ``TransformationChain``: each transform in the order listed, each only where its
predicate (``transforms.<alias>.predicate``, inverted by ``negate``) says so; a transform returning
None drops the record and the rest of the chain does not see it. A dropped record's offset is kept
as a ``Checkpoint``, so it is committed as if the record had been delivered; Checkpoints pass
through untouched. With ``transforms`` empty there is no chain at all (``build_chain`` returns None).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cdc_core.config import Config, Fields
from cdc_core.config.fields import ConfigField, InvalidValue, _parse_bool
from cdc_core.errors import ConfigError, ConnectorError, PluginError
from cdc_core.events import ChangeRecord, Checkpoint

TRANSFORMS = ConfigField("transforms", "list", [], doc="Aliases of the single message transforms, in the order they apply.")
PREDICATES = ConfigField("predicates", "list", [], doc="Aliases of the predicates transforms may name.")
#: The chain's properties: the two lists and everything under their aliases (checked by ``chain_problems``).
TRANSFORM_FIELDS = Fields([TRANSFORMS, PREDICATES], prefixes=["transforms.", "predicates."])


@dataclass(frozen=True)
class Step:
    """One configured transform: its alias, its object and its predicate's test (None: always applies)."""

    alias: str
    transform: Any
    apply: Callable[[ChangeRecord], ChangeRecord | None]
    test: Callable[[ChangeRecord], bool] | None = None
    negate: bool = False


class TransformChain:
    """The configured transforms, applied per batch in one tight loop."""

    def __init__(self, steps: list[Step]):
        """Keep the steps and their per-record plan."""
        self.steps = tuple(steps)
        #: (apply, test, negate) per step: plain tuples for the per-record loop.
        self._plan = tuple((s.apply, s.test, s.negate) for s in self.steps)

    def __len__(self) -> int:
        """The number of transforms."""
        return len(self.steps)

    def apply(self, batch: list) -> list:
        """The batch transformed: ChangeRecords through the chain (a dropped one with an offset leaves a
        Checkpoint of it), everything else (Checkpoints) as it is, in order."""
        out: list = []
        append = out.append
        steps = self.steps
        record_cls = ChangeRecord
        step: Step | None = None
        r: Any = None
        try:
            if len(steps) == 1 and steps[0].test is None:  # the common case: one transform, no predicate
                fn = steps[0].apply
                step = steps[0]
                for r in batch:
                    if r.__class__ is record_cls:
                        offset = r.offset
                        r = fn(r)
                        if r is not None:
                            append(r)
                        elif offset is not None:
                            append(Checkpoint(offset))
                    else:
                        append(r)
                return out
            plan = self._plan
            for r in batch:
                if r.__class__ is not record_cls:
                    append(r)
                    continue
                offset = r.offset
                for fn, test, negate in plan:
                    if test is not None and test(r) == negate:  # applies where test(r) != negate
                        continue
                    r = fn(r)
                    if r is None:
                        break
                if r is not None:
                    append(r)
                elif offset is not None:
                    append(Checkpoint(offset))
        except (ConfigError, ConnectorError):
            raise
        except Exception as e:
            if step is None or len(steps) > 1:
                step = _failing_step(steps, e)
            alias = step.alias if step is not None else "?"
            topic = getattr(r, "topic", None)
            raise ConnectorError(f"transforms.{alias} ({type(step.transform).__name__ if step else '?'}) failed on a "
                                 f"record of topic {topic!r}: {type(e).__name__}: {e}") from e
        return out

    def apply_records(self, records: list[ChangeRecord]) -> list[ChangeRecord]:
        """Only the records that remain (for readers that do not commit offsets per record, like Spark)."""
        return [r for r in self.apply(records) if r.__class__ is not Checkpoint]


def _failing_step(steps: tuple[Step, ...], error: BaseException) -> Step | None:
    """The step whose transform or predicate raised ``error`` (from its traceback), if it can be told."""
    tb = error.__traceback__
    owners = {}
    for s in steps:
        for fn in (s.apply, s.test):
            code = getattr(getattr(fn, "__func__", fn), "__code__", None)
            if code is not None:
                owners[code] = s
    found = None
    while tb is not None:
        frame_self = tb.tb_frame.f_locals.get("self")
        for s in steps:
            if frame_self is s.transform:
                found = s
        if tb.tb_frame.f_code in owners and found is None:
            found = owners[tb.tb_frame.f_code]
        tb = tb.tb_next
    return found


def _aliases(config: Config, field: ConfigField, problems: list[str]) -> list[str]:
    """The aliases listed in ``field`` (duplicates reported in ``problems``)."""
    try:
        aliases = config.get(field)
    except ConfigError as e:
        problems += e.problems
        return []
    seen: set[str] = set()
    for a in aliases:
        if a in seen:
            problems.append(f"{field.name}: the alias {a!r} is listed twice")
        seen.add(a)
    return list(dict.fromkeys(aliases))


def _instance(kind: str, prefix: str, config: Config, plugins: Any, problems: list[str]) -> Any:
    """The configured transform or predicate under ``prefix`` (None, with problems, if it cannot be made)."""
    sub = Config(config.subset(prefix))
    type_name = sub.get("type")
    if type_name in (None, "") or not str(type_name).strip():
        problems.append(f"{prefix}type: is required (the {kind}'s class name)")
        return None
    try:
        cls = plugins.get(kind, str(type_name).strip())
    except PluginError as e:
        problems.append(f"{prefix}type: {e}")
        return None
    try:
        return cls(sub)
    except ConfigError as e:
        problems += [f"{prefix}{p}" for p in e.problems]
    except (ValueError, TypeError) as e:
        problems.append(f"{prefix}type: {cls.__name__} refused its options: {e}")
    return None


def _build(config: Config, plugins: Any) -> tuple[TransformChain | None, list[str]]:
    """The chain and every problem found while making it."""
    problems: list[str] = []
    transforms = _aliases(config, TRANSFORMS, problems)
    predicates = _aliases(config, PREDICATES, problems)
    known_prefixes = tuple(f"transforms.{a}." for a in transforms) + tuple(f"predicates.{a}." for a in predicates)
    for name in config:
        if name.startswith(("transforms.", "predicates.")) and not name.startswith(known_prefixes):
            listing = "transforms" if name.startswith("transforms.") else "predicates"
            problems.append(f"{name}: its alias is not listed in {listing}")
    tests: dict[str, Callable[[ChangeRecord], bool]] = {}
    for alias in predicates:
        p = _instance("predicate", f"predicates.{alias}.", config, plugins, problems)
        if p is not None:
            tests[alias] = p.test
    steps: list[Step] = []
    for alias in transforms:
        prefix = f"transforms.{alias}."
        predicate = config.get(f"{prefix}predicate")
        predicate = None if predicate in (None, "") else str(predicate).strip()
        negate = False
        raw = config.get(f"{prefix}negate")
        if raw not in (None, ""):
            try:
                negate = _parse_bool(str(raw))
            except InvalidValue as e:
                problems.append(f"{prefix}negate: {e}")
            if predicate is None:
                problems.append(f"{prefix}negate: needs {prefix}predicate")
        if predicate is not None and predicate not in predicates:
            problems.append(f"{prefix}predicate: {predicate!r} is not listed in predicates "
                            f"({', '.join(predicates) or 'none is'})")
        t = _instance("transform", prefix, config, plugins, problems)
        if t is not None:
            steps.append(Step(alias, t, t.apply, tests.get(predicate) if predicate else None, negate))
    if problems:
        return None, problems
    return (TransformChain(steps) if steps else None), []


def chain_problems(config: Config, plugins: Any) -> list[str]:
    """Every problem with ``transforms``/``predicates`` and their options, one line each, naming the property."""
    return _build(config, plugins)[1]


def build_chain(config: Config, plugins: Any) -> TransformChain | None:
    """The configured chain, or None when ``transforms`` is empty; ConfigError if anything is invalid."""
    chain, problems = _build(config, plugins)
    if problems:
        raise ConfigError(problems)
    return chain
