"""Hostile configurations (tests/data/hostile_configs.yaml) through ``cdc validate`` and ``cdc run``.

Each ends with one clear line naming the property or the server's refusal and a non-zero exit:
never a traceback, never a retry loop, never a hang.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from cdc_process import run_cli, server_properties
from mariadb_cdc import mariadb_properties

CASES = yaml.safe_load((Path(__file__).parent / "data" / "hostile_configs.yaml").read_text(encoding="utf-8"))
RUN_TIMEOUT_S = 45.0


def _params(connector: str) -> list[Any]:
    return [pytest.param(case, id=case["name"].replace(" ", "-")) for case in CASES[connector]]


def _write(path: Path, props: dict[str, Any]) -> Path:
    """A .properties file written as the case spells it (``\\uXXXX`` stays an escape for the reader)."""
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items() if v is not None), encoding="utf-8")
    return path


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "cdc_core.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen[str], what: str) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"`cdc {what}` still running after {RUN_TIMEOUT_S}s:\n{err}") from None
    return proc.returncode, out, err


def _check(config: Path, case: dict[str, Any]) -> None:
    # Both commands at once: each is one short-lived process, and the suite has many cases.
    validating, running = _start("validate", str(config)), _start("run", str(config))
    code, stdout, stderr = _finish(validating, "validate")
    out = stdout + stderr
    assert "Traceback" not in out, out
    if case["validate"] is not None:
        assert code == 2, out
        assert case["validate"] in out, out
        problems = [line for line in stderr.splitlines() if line.startswith("  ")]
        assert len(problems) == 1, f"expected one line, got {problems}"
        expected_code, expected = 2, case["validate"]
    else:
        assert code == 0, out
        expected_code, expected = 1, case["run"]
    code, stdout, stderr = _finish(running, "run")
    out = stdout + stderr
    assert "Traceback" not in out, out
    assert code == expected_code, out
    assert expected in out, out
    errors = [line for line in stderr.splitlines() if " ERROR " in line or line.startswith("  ")]
    assert len(errors) == 1, f"expected one error line, got {errors}"


@pytest.mark.parametrize("case", _params("postgres"))
def test_hostile_postgres_configuration(pg_server, pg_db, tmp_path, case):
    if case.get("setup"):
        pg_server.execute(case["setup"], dbname=pg_db)
    props = server_properties(pg_server, pg_db, tmp_path, **{"slot.name": "hostile_slot"})
    props.update({f"debezium.source.{k}": v for k, v in case["set"].items()})
    _check(_write(tmp_path / "app.properties", props), case)


@pytest.mark.parametrize("case", _params("mariadb"))
def test_hostile_mariadb_configuration(mariadb_server, mariadb_db, tmp_path, case):
    if case.get("setup"):
        mariadb_server.execute(case["setup"], database=mariadb_db)
    props = mariadb_properties(mariadb_server, mariadb_db, tmp_path)
    props.update({f"debezium.source.{k.replace('{db}', mariadb_db)}": v.replace("{db}", mariadb_db)
                  for k, v in case["set"].items()})
    case = {**case, "run": (case.get("run") or "").replace("{db}", mariadb_db)}
    _check(_write(tmp_path / "app.properties", props), case)


@pytest.mark.parametrize("garbage", [bytes(range(256)) * 4, b"\xff\xfe\x00d\x00e\x00b", b"a=b\n\x00\x00\x00"])
@pytest.mark.parametrize("command", ["validate", "run", "offsets"])
def test_binary_garbage_configuration_file(tmp_path, garbage, command):
    config = tmp_path / "app.properties"
    config.write_bytes(garbage)
    result = run_cli(*(["offsets", "show"] if command == "offsets" else [command]), str(config))
    out = result.stdout + result.stderr
    assert result.returncode == 2 and "Traceback" not in out, out
    assert str(config) in out and ("not UTF-8 text" in out or "contains NUL bytes" in out), out


def test_surrogate_pairs_are_joined_as_java_does(tmp_path):
    """``\\uD83D\\uDE00`` in a .properties file is one emoji (Java's Properties), not two lone surrogates."""
    from cdc_core.config.loader import parse_properties

    props = parse_properties("a=x\\uD83D\\uDE00y\nb=\\u00e9\\uD83D\n")
    assert props["a"] == "x\U0001F600y"
    assert props["b"] == "\u00e9\ud83d"  # a lone surrogate stays, and the catalogue names it
