"""The expression language of Filter and ContentBasedRouter, as data: tests/data/expressions/*.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from cdc_core.events import ChangeRecord
from cdc_core.expressions import EvaluationError, Expression, ExpressionSyntaxError
from cdc_core.schema import Schema

DATA = Path(__file__).parent / "data" / "expressions"
RECORDS = yaml.safe_load((DATA / "records.yaml").read_text())
EVALUATION = yaml.safe_load((DATA / "evaluation.yaml").read_text())
SYNTAX = yaml.safe_load((DATA / "syntax.yaml").read_text())


def record(name: str) -> ChangeRecord:
    """The record called ``name`` in records.yaml."""
    r = RECORDS[name]
    schemas = r.get("schemas", {})

    def schema(n: str | None) -> Schema | None:
        return None if n is None else Schema("struct", name=n, version=None)

    return ChangeRecord(r["topic"], r["key"], r["value"], schema(schemas.get("key")), schema(schemas.get("value")),
                        headers=dict(r.get("headers") or {}))


@pytest.mark.parametrize("case", EVALUATION, ids=[f"{c['record']}: {c['expression']}" for c in EVALUATION])
def test_evaluation(case: dict[str, Any]) -> None:
    expression = Expression(case["expression"])
    if "error" in case:
        with pytest.raises(EvaluationError) as e:
            expression(record(case["record"]))
        assert case["error"] in e.value.reason
        assert e.value.column == case["column"]
    else:
        result = expression(record(case["record"]))
        assert result == case["expected"] and type(result) is type(case["expected"])


@pytest.mark.parametrize("text", SYNTAX["accepted"])
def test_accepted(text: str) -> None:
    Expression(text)


@pytest.mark.parametrize("case", SYNTAX["refused"], ids=[c["expression"] for c in SYNTAX["refused"]])
def test_refused_with_the_column(case: dict[str, Any]) -> None:
    with pytest.raises(ExpressionSyntaxError) as e:
        Expression(case["expression"])
    assert case["error"] in e.value.reason, e.value.reason
    assert e.value.column == case["column"], e.value


def test_nesting_and_length_are_bounded() -> None:
    with pytest.raises(ExpressionSyntaxError, match="nests deeper than 32 levels"):
        Expression("(" * 150 + "1" + ")" * 150)
    with pytest.raises(ExpressionSyntaxError, match="nests deeper than 32 levels"):
        Expression("!" * 150 + "true")
    with pytest.raises(ExpressionSyntaxError, match="nests deeper than 100 operations"):
        Expression(" + ".join(["1"] * 1000))
    with pytest.raises(ExpressionSyntaxError, match="longer than 4096 characters"):
        Expression("value.op == '" + "x" * 5000 + "'")
    assert Expression("(" * 30 + "1" + ")" * 30)(record("update")) == 1
    assert Expression(" + ".join(["1"] * 90))(record("update")) == 90


def test_the_expression_is_never_run_as_python() -> None:
    # Python syntax that would do something if eval'd is refused, never executed.
    for text in ("__import__('os').system('true')", "[x for x in ()]", "lambda: 1", "value.op if true else 1",
                 "value.__class__.__bases__()"):
        with pytest.raises(ExpressionSyntaxError):
            Expression(text)
    # A field name is looked up in the payload, never as a Python attribute.
    assert Expression("value.__class__")(record("update")) is None
    assert Expression("value['__class__']")(record("update")) is None
