"""The compiler: a syntax tree to a tree of closures, checked once so that evaluating a record is cheap.

Each node becomes a function of the record. What can be known without a record is checked here
and refused with the node's column: a method that does not exist on what it is called on, a
field of the ``topic`` string, a schema's property written without ``()``.

Decisions, from what Debezium does (``ScriptingTransformation``, ``Jsr223Engine``, ``GraalJsEngine``):

- A field of null (``value.before.id`` on an update whose ``before`` is null) throws in both
  languages (Groovy's NullPointerException, JavaScript's TypeError); Debezium lets it out of the
  transform and the connector stops. cdc does the same: an ``EvaluationError`` stops the engine,
  naming the expression, the column and the record. ``null.handling.mode`` only concerns records
  whose value is null (tombstones). ``value.before?.id`` (safe navigation in both languages) or
  ``value.before != null && value.before.id == 2`` lets a null through.
- A field the record does not have is null, as Graal.js reads it (Debezium's proxy says the member
  does not exist, so it is ``undefined``). Groovy would throw Kafka's DataException instead; cdc
  does not follow it there, because cdc sends records a Debezium configuration may not expect (its
  PostgreSQL connector has heartbeats on by default, whose value has only ``ts_ms``): with
  ``value.op == 'u'`` a heartbeat is simply not an update. ``get('f')`` reads a field the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cdc_core.events import ChangeRecord
from cdc_core.expressions.errors import EvaluationError, ExpressionSyntaxError
from cdc_core.expressions.nodes import Binary, Call, Conditional, Index, Literal, Member, Node, Unary, Variable
from cdc_core.expressions import values as v

Fn = Callable[[ChangeRecord], Any]

#: What a node evaluates to, as far as the compiler knows: a payload (struct or anything in it), a
#: Connect schema, the topic string, the headers map, one header, or a literal.
ANY, SCHEMA, STRING, HEADERS, HEADER = "any", "schema", "string", "headers", "header"
#: The methods of ``keySchema``/``valueSchema`` (Kafka Connect's ``Schema``), without arguments.
SCHEMA_METHODS = {"name": "name", "version": "version", "doc": "doc", "isOptional": "optional"}
#: The same as Groovy reads them as properties (``valueSchema.name``: Groovy reads ConnectSchema's fields).
SCHEMA_PROPERTIES = {"name": "name", "version": "version", "doc": "doc", "optional": "optional"}


class Header:
    """One header as the expression sees it (Debezium's ``RecordHeader``): its ``value``."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value


def compile_tree(node: Node) -> Fn:
    """The function of a record that evaluates ``node``."""
    return _compile(node)[0]


def _compile(node: Node) -> tuple[Fn, str]:
    """The function of ``node`` and the kind of what it returns."""
    if isinstance(node, Literal):
        value = node.value
        return (lambda r: value), "literal"
    if isinstance(node, Variable):
        return _variable(node.name)
    if isinstance(node, Member):
        return _member(node)
    if isinstance(node, Call):
        return _call(node)
    if isinstance(node, Index):
        return _index(node)
    if isinstance(node, Unary):
        return _unary(node)
    if isinstance(node, Binary):
        return _binary(node)
    if isinstance(node, Conditional):
        test, _ = _compile(node.test)
        then, k1 = _compile(node.then)
        otherwise, k2 = _compile(node.otherwise)
        truth = v.truth
        return (lambda r: then(r) if truth(test(r)) else otherwise(r)), (k1 if k1 == k2 else ANY)
    raise AssertionError(f"unknown node {node!r}")


def _variable(name: str) -> tuple[Fn, str]:
    """A bound variable: a field of the record."""
    if name == "key":
        return (lambda r: r.key), ANY
    if name == "value":
        return (lambda r: r.value), ANY
    if name == "keySchema":
        return (lambda r: r.key_schema), SCHEMA
    if name == "valueSchema":
        return (lambda r: r.value_schema), SCHEMA
    if name == "topic":
        return (lambda r: r.topic), STRING
    return (lambda r: r.headers), HEADERS  # headers, or Debezium's own binding name header


def source(node: Node) -> str:
    """The node written back as text (for error messages): ``value.before``, ``headers['h']``, ``(...)``."""
    if isinstance(node, Variable):
        return node.name
    if isinstance(node, Member):
        return f"{source(node.target)}{'?.' if node.safe else '.'}{node.name}"
    if isinstance(node, Call):
        args = ", ".join(source(a) for a in node.args)
        return f"{source(node.target)}{'?.' if node.safe else '.'}{node.method}({args})"
    if isinstance(node, Index):
        return f"{source(node.target)}[{source(node.index)}]"
    if isinstance(node, Literal):
        if node.value is None:
            return "null"
        return repr(node.value) if isinstance(node.value, str) else str(node.value).lower()
    return "(...)"


def _no_members(kind: str, node: Node, what: str) -> None:
    """Refuse a field or method of something that has none in the language."""
    if kind == STRING:
        target = source(node.target)  # type: ignore[attr-defined]
        raise ExpressionSyntaxError(f"{what} of the string {target} is not part of the expression language (it has "
                                    "no string methods)", node.column)
    if kind == "literal":
        raise ExpressionSyntaxError(f"{what} of a literal is not part of the expression language", node.column)


def _field(target: Fn, name: str, node: Node, safe: bool, where: str) -> Fn:
    """``target.name`` on a payload: the field's value (null if there is no such field); EvaluationError on null
    (unless ``safe``) or on something that has no fields."""
    column = node.column

    def get(r: ChangeRecord) -> Any:
        t = target(r)
        try:
            return t[name]
        except (KeyError, TypeError, IndexError):
            if t is None:
                if safe:
                    return None
                raise EvaluationError(f"cannot read '{name}' of null ({where} is null)", column) from None
            if isinstance(t, dict):
                return None
            raise EvaluationError(f"cannot read '{name}' of {where}, {v.describe(t)}", column) from None

    return get


def _schema_attribute(target: Fn, attr: str, what: str, node: Node, safe: bool, where: str) -> Fn:
    """``keySchema.name()`` (or Groovy's ``keySchema.name``): an attribute of the Connect schema."""
    column = node.column

    def get(r: ChangeRecord) -> Any:
        s = target(r)
        if s is None:
            if safe:
                return None
            raise EvaluationError(f"cannot read {what} of null ({where} is null)", column)
        return getattr(s, attr)

    return get


def _header(target: Fn, name_fn: Fn, safe: bool, where: str, column: int) -> Fn:
    """``headers.name``: the header (null if there is none, as Groovy's map access gives)."""

    def get(r: ChangeRecord) -> Any:
        h = target(r)
        if h is None:
            if safe:
                return None
            raise EvaluationError(f"cannot read a header of null ({where} is null)", column)
        name = name_fn(r)
        return Header(h[name]) if name in h else None

    return get


def _member(node: Member) -> tuple[Fn, str]:
    """``target.name`` on a payload, a schema, the headers or a header."""
    target, kind = _compile(node.target)
    where = source(node.target)
    _no_members(kind, node, f"the field '{node.name}'")
    if kind == SCHEMA:
        if node.name not in SCHEMA_PROPERTIES:
            raise ExpressionSyntaxError(f"a schema has no property '{node.name}' in the expression language (it has "
                                        f"{', '.join(SCHEMA_PROPERTIES)})", node.column)
        return _schema_attribute(target, SCHEMA_PROPERTIES[node.name], node.name, node, node.safe, where), ANY
    if kind == HEADERS:
        name = node.name
        return _header(target, lambda r: name, node.safe, where, node.column), HEADER
    if kind == HEADER:
        if node.name != "value":
            raise ExpressionSyntaxError(f"a header has only 'value' (cdc records carry no header schemas), not "
                                        f"'{node.name}'", node.column)
        column, safe = node.column, node.safe

        def header_value(r: ChangeRecord) -> Any:
            h = target(r)
            if h is None:
                if safe:
                    return None
                raise EvaluationError(f"cannot read 'value' of null (there is no header {where})", column)
            return h.value

        return header_value, ANY
    return _field(target, node.name, node, node.safe, where), ANY


def _call(node: Call) -> tuple[Fn, str]:
    """``target.method(...)``: a schema's methods, ``get(name)`` of a payload or of the headers."""
    target, kind = _compile(node.target)
    where = source(node.target)
    _no_members(kind, node, f"the method '{node.method}'")
    if kind == SCHEMA:
        if node.method not in SCHEMA_METHODS:
            raise ExpressionSyntaxError(f"a schema has no method '{node.method}' in the expression language (it has "
                                        f"{', '.join(m + '()' for m in SCHEMA_METHODS)})", node.column)
        if node.args:
            raise ExpressionSyntaxError(f"{node.method}() takes no arguments", node.column)
        return _schema_attribute(target, SCHEMA_METHODS[node.method], f"{node.method}()", node, node.safe, where), ANY
    if node.method != "get" or kind == HEADER:
        has = "only 'value'" if kind == HEADER else "only the method get(name)"
        raise ExpressionSyntaxError(f"'{node.method}' is not a method of {where} in the expression language "
                                    f"({'a header' if kind == HEADER else 'it'} has {has})", node.column)
    if len(node.args) != 1:
        raise ExpressionSyntaxError(f"get() takes one argument, not {len(node.args)}", node.column)
    arg, _ = _compile(node.args[0])
    if kind == HEADERS:
        return _header(target, arg, node.safe, where, node.column), HEADER
    if isinstance(node.args[0], Literal):
        name = node.args[0].value
        if not isinstance(name, str):
            raise ExpressionSyntaxError("get() takes a field name (a string)", node.args[0].column)
        return _field(target, name, node, node.safe, where), ANY
    return _dynamic_field(target, arg, node, node.safe, where), ANY


def _dynamic_field(target: Fn, key: Fn, node: Node, safe: bool, where: str) -> Fn:
    """``target[key]`` or ``target.get(key)`` with a computed key: a field by name or an array element by position."""
    column = node.column

    def get(r: ChangeRecord) -> Any:
        t, k = target(r), key(r)
        if t is None:
            if safe:
                return None
            raise EvaluationError(f"cannot read [{v.describe(k)}] of null ({where} is null)", column)
        if isinstance(t, dict):
            if not isinstance(k, str):
                raise EvaluationError(f"a field name must be a string, not {v.describe(k)}", column)
            return t.get(k)
        if isinstance(t, list):
            if not v.is_number(k) or int(k) != k:
                raise EvaluationError(f"an array index must be an integer, not {v.describe(k)}", column)
            i = int(k)
            return t[i] if 0 <= i < len(t) else None  # Groovy: null past the end
        raise EvaluationError(f"cannot read [{v.describe(k)}] of {where}, {v.describe(t)}", column)

    return get


def _index(node: Index) -> tuple[Fn, str]:
    """``target[index]`` on a payload or the headers."""
    target, kind = _compile(node.target)
    where = source(node.target)
    _no_members(kind, node, "a subscript")
    if kind in (SCHEMA, HEADER):
        raise ExpressionSyntaxError(f"{where} cannot be subscripted", node.column)
    key, _ = _compile(node.index)
    if kind == HEADERS:
        return _header(target, key, False, where, node.column), HEADER
    if isinstance(node.index, Literal) and isinstance(node.index.value, str):
        return _field(target, node.index.value, node, False, where), ANY
    return _dynamic_field(target, key, node, False, where), ANY


def _unary(node: Unary) -> tuple[Fn, str]:
    """``!x`` (Groovy truth) or ``-x``."""
    operand, _ = _compile(node.operand)
    if node.op == "!":
        truth = v.truth
        return (lambda r: not truth(operand(r))), ANY
    column, negate = node.column, v.negate
    return (lambda r: negate(operand(r), column)), ANY


def _binary(node: Binary) -> tuple[Fn, str]:
    """The binary operators; ``&&``/``||`` short-circuit and give booleans, as in Groovy."""
    left, _ = _compile(node.left)
    right, _ = _compile(node.right)
    op, column = node.op, node.column
    truth, equals = v.truth, v.equals
    if op == "&&":
        return (lambda r: truth(left(r)) and truth(right(r))), ANY
    if op == "||":
        return (lambda r: truth(left(r)) or truth(right(r))), ANY
    if op == "==":
        if isinstance(node.right, Literal) and isinstance(node.right.value, str):
            const = node.right.value  # the common case, value.op == 'u', without a call of equals

            def equals_string(r: ChangeRecord) -> bool:
                a = left(r)
                return type(a) is str and a == const

            return equals_string, ANY
        return (lambda r: equals(left(r), right(r))), ANY
    if op == "!=":
        return (lambda r: not equals(left(r), right(r))), ANY
    if op == "+":
        plus = v.plus
        return (lambda r: plus(left(r), right(r), column)), ANY
    if op == "-":
        minus = v.minus
        return (lambda r: minus(left(r), right(r), column)), ANY
    compare = v.compare
    return (lambda r: compare(op, left(r), right(r), column)), ANY
