"""JsonConverter's ``replace.null.with.default``: a null whose schema has a default is written as that default.

Kafka 3.9's JsonConverter converts each struct field with ``Struct.getWithoutDefault`` and then,
for a null value whose schema has a default, writes the default when ``replace.null.with.default``
is true (its default), else null; the same for array elements, map values and the top-level
value, with schemas enabled or not. cdc's payloads hold what the Struct holds (null for a NULL
column), so the serializer applies the same rule.

One value differs the other way round: Debezium stores a ``source.snapshot`` of FALSE as an unset
field (``SnapshotRecord.toSource``), so a JsonConverter writing defaults shows ``"false"`` and one
that does not shows null. cdc's connectors fill in ``"false"``; with the property off it is
written as null, as Debezium's is.

Per schema object, a function is built once (and cached on the schema, like its JSON): a single
generated test of the few fields that can change, returning the payload itself when nothing does
(the usual case), and a copying rewrite only when something does. A schema with nothing to
change gets no function at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cdc_core.schema import Schema
from cdc_core.source import SNAPSHOT_ENUM

Filler = Callable[[Any], Any]

#: Debezium leaves ``source.snapshot`` unset for SnapshotRecord.FALSE; this is that value.
_SNAPSHOT_UNSET = "false"


def payload_filler(schema: Schema | None, replace: bool) -> Filler | None:
    """The function JsonConverter's default handling applies to payloads of ``schema`` (None: identity).

    ``replace`` is the converter's ``replace.null.with.default``. Built once per schema object.
    """
    if schema is None:
        return None
    cache = schema._fillers
    if replace in cache:
        return cache[replace]
    filler = _build(schema, replace)
    cache[replace] = filler
    return filler


def fill(schema: Schema | None, payload: Any, replace: bool = True) -> Any:
    """``payload`` as JsonConverter writes it under ``schema`` (a copy where something changes)."""
    filler = payload_filler(schema, replace)
    return payload if filler is None else filler(payload)


def _swap(schema: Schema, replace: bool) -> tuple[Any, Any] | None:
    """``(value, written as)`` for a value of this very schema, or None."""
    if replace:
        return None if schema.default is None else (None, schema.default)
    return (_SNAPSHOT_UNSET, None) if schema is SNAPSHOT_ENUM else None


def _rewrite(schema: Schema, value: Any, replace: bool) -> Any:
    """The slow path: ``value`` rewritten (new containers only where something changed)."""
    swap = _swap(schema, replace)
    if swap is not None and (value is None if swap[0] is None else value == swap[0]):
        return swap[1]
    if value is None:
        return None
    kind = schema.type
    if kind == "struct":
        out = None
        for f in schema.fields:
            old = value.get(f.name)
            new = _rewrite(f.schema, old, replace)
            if new is not old:
                if out is None:
                    out = dict(value)
                out[f.name] = new
        return value if out is None else out
    if kind == "array":
        assert schema.items is not None
        items = [_rewrite(schema.items, x, replace) for x in value]
        return value if all(a is b for a, b in zip(items, value)) else items
    if kind == "map":
        assert schema.values is not None
        if isinstance(value, dict):
            pairs = {k: _rewrite(schema.values, x, replace) for k, x in value.items()}
            return value if all(pairs[k] is x for k, x in value.items()) else pairs
        # Maps with non-string keys are arrays of [key, value] pairs.
        rows = [[k, _rewrite(schema.values, x, replace)] for k, x in value]
        return value if all(r[1] is x for r, (_, x) in zip(rows, value)) else rows
    return value


class _Names:
    """Fresh variable names and constants for one generated test."""

    def __init__(self) -> None:
        self.count = 0
        self.constants: dict[str, Any] = {}

    def var(self) -> str:
        self.count += 1
        return f"_v{self.count}"

    def const(self, value: Any) -> str:
        name = f"_c{len(self.constants)}"
        self.constants[name] = value
        return name


def _test(schema: Schema, expr: str, replace: bool, names: _Names) -> str | None:
    """A Python expression true when the value ``expr`` of ``schema`` would be rewritten (None: never)."""
    swap = _swap(schema, replace)
    var = names.var()
    inner = _inner_test(schema, var, replace, names)
    if swap is None and inner is None:
        return None
    if swap is None:
        return f"(({var} := {expr}) is not None and {inner})"
    hit = f"({var} := {expr}) is None" if swap[0] is None else f"({var} := {expr}) == {names.const(swap[0])}"
    if inner is None:
        return f"({hit})"
    return f"({hit} or ({var} is not None and {inner}))"


def _inner_test(schema: Schema, var: str, replace: bool, names: _Names) -> str | None:
    """The test of a non-null value held in ``var``."""
    kind = schema.type
    if kind == "struct":
        parts = [t for f in schema.fields if (t := _test(f.schema, f"{var}.get({f.name!r})", replace, names))]
        return f"({' or '.join(parts)})" if parts else None
    if kind in ("array", "map"):
        element = schema.items if kind == "array" else schema.values
        assert element is not None
        item = names.var()
        t = _test(element, item, replace, names)
        if t is None:
            return None
        if kind == "array":
            return f"any({t} for {item} in {var})"
        return (f"any({t} for {item} in ({var}.values() if isinstance({var}, dict) else "
                f"(_p[1] for _p in {var})))")
    return None


def _build(schema: Schema, replace: bool) -> Filler | None:
    names = _Names()
    test = _test(schema, "payload", replace, names)
    if test is None:
        return None
    source = (
        "def fill(payload):\n"
        f"    if {test}:\n"
        "        return _rewrite(_schema, payload, _replace)\n"
        "    return payload\n"
    )
    scope: dict[str, Any] = {"_rewrite": _rewrite, "_schema": schema, "_replace": replace, **names.constants}
    exec(compile(source, f"<payload filler of {schema.name or schema.type}>", "exec"), scope)  # noqa: S102
    return scope["fill"]
