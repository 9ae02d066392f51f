"""The parser: tokens to a syntax tree by recursive descent, refusing anything outside the grammar.

::

    expression := or ("?" expression ":" expression)?
    or         := and ("||" and)*
    and        := equality ("&&" equality)*
    equality   := relational (("==" | "!=" | "===" | "!==") relational)*
    relational := additive (("<" | "<=" | ">" | ">=") additive)*
    additive   := unary (("+" | "-") unary)*
    unary      := ("!" | "-") unary | postfix
    postfix    := primary ("." name | "?." name | ("." | "?.") name "(" arguments ")" | "[" expression "]")*
    primary    := string | number | "true" | "false" | "null" | variable | "(" expression ")"
"""

from __future__ import annotations

from cdc_core.expressions.errors import ExpressionSyntaxError
from cdc_core.expressions.nodes import Binary, Call, Conditional, Index, Literal, Member, Node, Unary, Variable
from cdc_core.expressions.tokens import Token, tokenize

#: The names an expression may start from (Debezium binds ``header``; its documentation says ``headers``).
VARIABLES = frozenset({"key", "value", "keySchema", "valueSchema", "topic", "headers", "header"})
_CONSTANTS = {"true": True, "false": False, "null": None}
#: Words of Groovy and JavaScript that would make the text a program rather than an expression.
_KEYWORDS = frozenset({"new", "def", "var", "let", "const", "function", "return", "if", "else", "for", "while", "do",
                       "class", "import", "this", "super", "throw", "try", "catch", "in", "instanceof", "typeof",
                       "delete", "void", "yield", "await", "switch", "case", "as", "undefined"})
#: How deeply parentheses, ``!`` and conditionals may nest, and how deep the whole tree may be
#: (a configuration value, not a program; the compiled closures recurse as deep as the tree).
MAX_DEPTH = 32
MAX_TREE_DEPTH = 100


def parse(text: str) -> Node:
    """The syntax tree of ``text``; ExpressionSyntaxError naming the column of the first problem."""
    if not text.strip():
        raise ExpressionSyntaxError("the expression is empty", 1)
    tree = _Parser(tokenize(text)).parse()
    _check_depth(tree)
    return tree


def _check_depth(tree: Node) -> None:
    """Refuse a tree deeper than MAX_TREE_DEPTH (a long chain ``a + b + c ...`` nests to the left)."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_TREE_DEPTH:
            raise ExpressionSyntaxError(f"the expression nests deeper than {MAX_TREE_DEPTH} operations", node.column)
        for child in _children(node):
            stack.append((child, depth + 1))


def _children(node: Node) -> tuple[Node, ...]:
    """The nodes directly below ``node``."""
    if isinstance(node, (Member, Index)):
        return (node.target, node.index) if isinstance(node, Index) else (node.target,)
    if isinstance(node, Call):
        return (node.target, *node.args)
    if isinstance(node, Unary):
        return (node.operand,)
    if isinstance(node, Binary):
        return (node.left, node.right)
    if isinstance(node, Conditional):
        return (node.test, node.then, node.otherwise)
    return ()


class _Parser:
    """A recursive-descent parser over one token list."""

    def __init__(self, tokens: list[Token]):
        self.tokens = tokens
        self.i = 0
        self.depth = 0

    @property
    def tok(self) -> Token:
        """The current token."""
        return self.tokens[self.i]

    def at(self, *ops: str) -> bool:
        """True if the current token is one of the operators ``ops``."""
        return self.tok.kind == "op" and self.tok.text in ops

    def take(self) -> Token:
        """The current token, moving past it."""
        t = self.tokens[self.i]
        self.i += 1
        return t

    def expect(self, op: str, what: str) -> Token:
        """The current token if it is ``op``; otherwise ExpressionSyntaxError saying what was expected."""
        if not self.at(op):
            raise self.unexpected(f"expected {what}")
        return self.take()

    def unexpected(self, expected: str) -> ExpressionSyntaxError:
        """The error for the current token, where ``expected`` was needed."""
        t = self.tok
        found = "the end of the expression" if t.kind == "end" else repr(t.text)
        return ExpressionSyntaxError(f"{expected}, found {found}", t.column)

    def parse(self) -> Node:
        """The whole expression: nothing may follow it."""
        node = self.expression()
        if self.tok.kind != "end":
            raise self.unexpected("expected an operator or the end of the expression")
        return node

    def expression(self) -> Node:
        """``or ("?" expression ":" expression)?``."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExpressionSyntaxError(f"the expression nests deeper than {MAX_DEPTH} levels", self.tok.column)
        test = self.binary(0)
        if self.at("?"):
            self.take()
            then = self.expression()
            self.expect(":", "':' of the conditional 'test ? a : b'")
            otherwise = self.expression()
            test = Conditional(test.column, test, then, otherwise)
        self.depth -= 1
        return test

    _LEVELS = (("||",), ("&&",), ("==", "!=", "===", "!=="), ("<", "<=", ">", ">="), ("+", "-"))

    def binary(self, level: int) -> Node:
        """Left-associative binary operators, loosest binding first."""
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.at(*self._LEVELS[level]):
            t = self.take()
            op = {"===": "==", "!==": "!="}.get(t.text, t.text)
            left = Binary(t.column, op, left, self.binary(level + 1))
        return left

    def unary(self) -> Node:
        """``!x``, ``-x`` or a postfix expression."""
        if self.at("!", "-"):
            t = self.take()
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise ExpressionSyntaxError(f"the expression nests deeper than {MAX_DEPTH} levels", t.column)
            operand = self.unary()
            self.depth -= 1
            if t.text == "-" and isinstance(operand, Literal) and type(operand.value) in (int, float):
                return Literal(t.column, -operand.value)
            return Unary(t.column, t.text, operand)
        return self.postfix()

    def postfix(self) -> Node:
        """A primary followed by member accesses, method calls and subscripts."""
        node = self.primary()
        while True:
            if self.at(".", "?."):
                safe = self.take().text == "?."
                t = self.tok
                if t.kind != "name":
                    raise self.unexpected("expected a field or method name after '.'")
                self.take()
                if self.at("("):
                    self.take()
                    args: list[Node] = []
                    if not self.at(")"):
                        args.append(self.expression())
                        while self.at(","):
                            self.take()
                            args.append(self.expression())
                    self.expect(")", "',' or ')' of the method call")
                    node = Call(t.column, node, t.text, tuple(args), safe)
                else:
                    node = Member(t.column, node, t.text, safe)
            elif self.at("["):
                t = self.take()
                index = self.expression()
                self.expect("]", "']'")
                node = Index(t.column, node, index)
            elif self.at("("):
                raise ExpressionSyntaxError("only methods can be called (target.method(...))", self.tok.column)
            else:
                return node

    def primary(self) -> Node:
        """A literal, a variable or a parenthesized expression."""
        t = self.tok
        if t.kind in ("string", "number"):
            self.take()
            return Literal(t.column, t.value)
        if t.kind == "name":
            self.take()
            if t.text in _CONSTANTS:
                return Literal(t.column, _CONSTANTS[t.text])
            if t.text in VARIABLES:
                return Variable(t.column, t.text)
            if t.text in _KEYWORDS:
                raise ExpressionSyntaxError(f"'{t.text}' is not part of the expression language", t.column)
            raise ExpressionSyntaxError(
                f"unknown name '{t.text}' (an expression starts from key, value, keySchema, valueSchema, topic, "
                "headers or a literal)", t.column)
        if self.at("("):
            self.take()
            node = self.expression()
            self.expect(")", "')'")
            return node
        raise self.unexpected("expected a value (a literal, a variable or '(')")
