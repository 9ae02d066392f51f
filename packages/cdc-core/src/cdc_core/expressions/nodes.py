"""The syntax tree of an expression: one small class per construct, each knowing its column."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Node:
    """A part of an expression; ``column`` (1-based) is where it starts in the text."""

    column: int


@dataclass(frozen=True, slots=True)
class Literal(Node):
    """A string, number, ``true``, ``false`` or ``null``."""

    value: Any


@dataclass(frozen=True, slots=True)
class Variable(Node):
    """One of the bound variables: ``key``, ``value``, ``keySchema``, ``valueSchema``, ``topic``, ``headers``."""

    name: str


@dataclass(frozen=True, slots=True)
class Member(Node):
    """``target.name`` (``safe``: ``target?.name``, null when the target is null)."""

    target: Node
    name: str
    safe: bool


@dataclass(frozen=True, slots=True)
class Call(Node):
    """``target.method(args)`` (``safe``: ``target?.method(args)``)."""

    target: Node
    method: str
    args: tuple[Node, ...]
    safe: bool


@dataclass(frozen=True, slots=True)
class Index(Node):
    """``target[index]``: a field by name, or an array element by position."""

    target: Node
    index: Node


@dataclass(frozen=True, slots=True)
class Unary(Node):
    """``!operand`` or ``-operand``."""

    op: str
    operand: Node


@dataclass(frozen=True, slots=True)
class Binary(Node):
    """``left op right`` for the comparisons, ``+``, ``-``, ``&&`` and ``||`` (column: the operator's)."""

    op: str
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class Conditional(Node):
    """``test ? then : otherwise``."""

    test: Node
    then: Node
    otherwise: Node
