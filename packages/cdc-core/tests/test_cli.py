"""The cdc command: validate, offsets show, run's config errors; problems one per line, secrets never printed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import orjson
import pytest

from cdc_core.cli import main
from cdc_core.config import Config
from cdc_core.stores.file_offsets import FileOffsetStore

REPO = Path(__file__).resolve().parents[3]
SECRET = "pw-hunter2-do-not-print"

VALID = f"""\
debezium.sink.type=file
debezium.sink.file.dir=out
debezium.source.connector.class=postgres
debezium.source.database.dbname=inventory
debezium.source.topic.prefix=dbserver1
debezium.source.database.password={SECRET}
"""

INVALID = VALID + """\
debezium.source.database.port=abc
debezium.source.databse.hostname=db
debezium.source.snapshot.mode=sometimes
debezium.format.value=protobuf
debezium.sink.file.fsync=perhaps
"""

EXPECTED_PROBLEMS = [
    "invalid configuration:",
    "  debezium.format.value: 'protobuf' is not a supported format; choose json, cloudevents, avro",
    "  debezium.source.database.port: 'abc' is not an integer",
    "  debezium.source.snapshot.mode: 'sometimes' is not one of: initial, initial_only, no_data, always, when_needed, configuration_based, custom",
    "  debezium.source.databse.hostname: unknown property; did you mean debezium.source.database.hostname?",
    "  debezium.sink.file.fsync: 'perhaps' is not a boolean (true or false)",
]


@pytest.fixture(autouse=True)
def _logging(restore_logging):
    """main() configures logging; put it back afterwards."""


def write(tmp_path: Path, text: str, name: str = "app.properties") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_validate_accepts_a_valid_configuration(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, VALID)
    assert main(["validate", path]) == 0
    out, err = capsys.readouterr()
    assert out == f"{path}: configuration is valid\n"
    assert SECRET not in out + err


def test_validate_lists_every_problem_on_its_own_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", write(tmp_path, INVALID)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == EXPECTED_PROBLEMS
    assert SECRET not in err


def test_validate_of_plain_connector_properties_uses_plain_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = f"connector.class=postgres\ndatabase.dbname=inventory\ndatabase.password={SECRET}\ntopic.prefix=a b\n"
    assert main(["validate", write(tmp_path, text)]) == 2
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        "invalid configuration:",
        "  topic.prefix: 'a b' may contain only letters, digits, '.', '_' and '-'",
    ]
    assert SECRET not in out + err


def test_validate_yaml_with_an_unknown_connector(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = f"debezium:\n  sink.type: stdout\n  source:\n    connector.class: oracle\n    topic.prefix: x\n    database.password: {SECRET}\n"
    assert main(["validate", write(tmp_path, text, "app.yaml")]) == 2
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert lines[0] == "invalid configuration:"
    assert lines[1].startswith("  debezium.source.connector.class: no connector called 'oracle'; available: ")
    assert "postgres" in lines[1]
    assert SECRET not in out + err


def test_validate_of_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nope.yaml"
    assert main(["validate", str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "invalid configuration:",
        f"  cannot read configuration file {path}: No such file or directory",
    ]


def test_run_with_an_invalid_configuration_starts_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", write(tmp_path, INVALID)]) == 2
    out, err = capsys.readouterr()
    assert err.splitlines() == EXPECTED_PROBLEMS
    assert SECRET not in out + err
    assert not (tmp_path / "out").exists()


def offsets_config(tmp_path: Path) -> tuple[str, Path]:
    offsets = tmp_path / "offsets.json"
    return write(tmp_path, VALID + f"debezium.source.offset.storage.file.filename={offsets}\n"), offsets


def test_offsets_show_prints_the_stored_offsets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, offsets = offsets_config(tmp_path)
    store = FileOffsetStore(Config({"offset.storage.file.filename": str(offsets)}))
    store.commit([({"server": "dbserver1"}, {"lsn": 24023128, "txId": 555, "ts_usec": 1559033904863619})])
    assert main(["offsets", "show", path]) == 0
    out, err = capsys.readouterr()
    assert orjson.loads(out) == [
        {"partition": {"server": "dbserver1"}, "offset": {"lsn": 24023128, "txId": 555, "ts_usec": 1559033904863619}}
    ]
    assert SECRET not in out + err


def test_offsets_show_with_no_offsets_yet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = offsets_config(tmp_path)
    assert main(["offsets", "show", path]) == 0
    assert orjson.loads(capsys.readouterr().out) == []


def test_offsets_show_without_an_offsets_file_configured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["offsets", "show", write(tmp_path, VALID)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "invalid configuration:",
        "  debezium.source.offset.storage.file.filename: is not set, so no offsets are stored",
    ]


def test_offsets_show_of_a_corrupt_file_fails_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, offsets = offsets_config(tmp_path)
    offsets.write_bytes(b'{"version": 1, "offsets": [')
    assert main(["offsets", "show", path]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert f"offsets file {offsets} is corrupt" in err
    assert offsets.read_bytes() == b'{"version": 1, "offsets": ['


def test_demo_with_an_unknown_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "nosuch"]) == 2
    assert capsys.readouterr().err.startswith("no demo called 'nosuch'; available: ")


@pytest.mark.skipif(shutil.which("uv") is None, reason="the uv command is not on PATH")
def test_cdc_validate_as_a_command(tmp_path: Path) -> None:
    path = write(tmp_path, INVALID)
    done = subprocess.run(
        ["uv", "run", "--no-sync", "cdc", "validate", path], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-len(EXPECTED_PROBLEMS):] == EXPECTED_PROBLEMS
    assert SECRET not in done.stdout + done.stderr
