"""What Filter and ContentBasedRouter share (Debezium's ``ScriptingTransformation``): options, tombstones, topics."""

from __future__ import annotations

import logging
import re
from typing import Any, ClassVar

from cdc_core.config import Config
from cdc_core.errors import ConfigError, ConnectorError
from cdc_core.events import ChangeRecord
from cdc_core.expressions import EvaluationError, Expression, ExpressionSyntaxError, language_problem
from cdc_core.transforms.java_regex import java_pattern

log = logging.getLogger(__name__)

NULL_HANDLING_MODES = ("keep", "drop", "evaluate")
#: The options every scripting transform knows besides its expression (Kafka Connect's own included).
_COMMON = frozenset({"type", "topic.regex", "language", "null.handling.mode", "predicate", "negate"})


class ScriptingTransform:
    """Evaluates a configured expression on each record; subclasses say what the result does.

    As Debezium: records whose topic does not fully match ``topic.regex`` pass unchanged; records
    with a null value are passed (``keep``, the default), dropped (``drop``) or evaluated
    (``evaluate``) per ``null.handling.mode``. An expression failing on a record stops the engine
    (Debezium's transform throws, and the connector stops), naming the expression and the record.
    """

    #: The property holding the expression (``condition``, ``topic.expression``).
    expression_property: ClassVar[str]

    def __init__(self, config: Config):
        problems: list[str] = []
        prop = self.expression_property
        self.type = str(config.get("type") or self.class_names[0])  # type: ignore[attr-defined]
        problem = language_problem(config.get("language"))
        if problem:
            problems.append(f"language: {problem}")
        text = config.get(prop)
        if isinstance(text, bool):  # YAML's unquoted true/false
            text = "true" if text else "false"
        self.expression: Expression | None = None
        if text is None or str(text).strip() == "":
            problems.append(f"{prop}: is required and has no value")
        else:
            try:
                self.expression = Expression(str(text))
            except ExpressionSyntaxError as e:
                problems.append(f"{prop}: cannot use {str(text)!r}: {e.reason} at column {e.column}")
        mode = str(config.get("null.handling.mode") or "keep").strip().lower()
        if mode not in NULL_HANDLING_MODES:
            problems.append(f"null.handling.mode: {config.get('null.handling.mode')!r} is not one of: "
                            f"{', '.join(NULL_HANDLING_MODES)}")
        self.null_handling = mode
        self.topic_pattern: re.Pattern[str] | None = None
        regex = config.get("topic.regex")
        if regex not in (None, ""):
            try:
                self.topic_pattern = java_pattern(str(regex))
            except re.error as e:
                problems.append(f"topic.regex: {str(regex)!r} is not a valid regular expression: {e}")
        if problems:
            raise ConfigError(problems)
        for name in config:
            if name not in _COMMON and name != prop:
                log.warning("%s: the option %r is not one of %s's; it is ignored", self.type, name, self.type)
        assert self.expression is not None
        self._evaluate = self.expression.evaluate

    def apply(self, record: ChangeRecord) -> ChangeRecord | None:
        """The record per ``topic.regex``, ``null.handling.mode`` and the expression's result."""
        if self.topic_pattern is not None and self.topic_pattern.fullmatch(record.topic) is None:
            return record
        if record.value is None:
            if self.null_handling == "keep":
                return record
            if self.null_handling == "drop":
                return None
        try:
            result = self._evaluate(record)
        except EvaluationError as e:
            raise self.failure(record, f"{e.reason} at column {e.column}") from None
        return self.use(record, result)

    def use(self, record: ChangeRecord, result: Any) -> ChangeRecord | None:
        """The record the expression's ``result`` makes of ``record``."""
        raise NotImplementedError

    def failure(self, record: ChangeRecord, reason: str) -> ConnectorError:
        """The error that stops the engine when the expression cannot be used on ``record``."""
        assert self.expression is not None
        where = f" at offset {record.offset}" if record.offset else ""
        return ConnectorError(f"{self.type}: {self.expression_property} {self.expression.text!r} failed on a record "
                              f"of topic {record.topic!r}{where}: {reason}")
