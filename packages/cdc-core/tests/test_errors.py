"""cdc's errors as a user meets them after they crossed a process (snapshot and streaming workers send theirs)."""

from __future__ import annotations

import multiprocessing

from cdc_core.errors import ConfigError
from cdc_core.expressions.errors import EvaluationError, ExpressionSyntaxError
from cdc_core.semantic import ValueConversionError


def test_a_config_error_sent_by_a_worker_process_arrives_with_its_problems():
    error = ConfigError(["snapshot.max.threads: '0' is below the minimum 1", "topic.prefix: required"])
    receiving, sending = multiprocessing.Pipe(duplex=False)
    sending.send(error)
    arrived = receiving.recv()
    assert isinstance(arrived, ConfigError)
    assert arrived.problems == error.problems
    assert str(arrived) == str(error) == ("invalid configuration:\n  snapshot.max.threads: '0' is below the minimum 1"
                                          "\n  topic.prefix: required")


def test_conversion_and_expression_errors_cross_a_process_whole():
    """A snapshot worker converts rows and runs transforms: their errors must arrive, not fail to unpickle."""
    errors = [ValueConversionError("amount", "NUMERIC(5,2)", "NaN", "special value NaN has no unscaled representation"),
              ExpressionSyntaxError("unexpected ')'", 7), EvaluationError("field of null: value.after.id", 1)]
    receiving, sending = multiprocessing.Pipe(duplex=False)
    for error in errors:
        sending.send(error)
        arrived = receiving.recv()
        assert type(arrived) is type(error) and str(arrived) == str(error) and vars(arrived) == vars(error)
