"""Kafka clients for the sink, stores and signal channel: Java client properties mapped onto librdkafka, errors in one line.

confluent-kafka is imported lazily (``cdc[kafka]``): cdc-core imports and runs without it.
Every message built here is passed through ``redact`` so a password or JAAS value never leaves it.
"""

from __future__ import annotations

import logging
import re
import socket
from typing import Any

from cdc_core.config.config import is_secret
from cdc_core.errors import ConfigError

log = logging.getLogger("cdc.kafka")

#: Java client properties librdkafka has no use for (serializers, JVM buffers, class names): dropped with a debug note.
JAVA_ONLY = frozenset({
    "key.serializer", "value.serializer", "key.deserializer", "value.deserializer", "max.block.ms",
    "interceptor.classes", "metric.reporters", "metrics.num.samples", "metrics.sample.window.ms",
    "metrics.recording.level", "auto.include.jmx.reporter", "security.providers", "sasl.login.class",
    "sasl.login.callback.handler.class", "sasl.client.callback.handler.class", "ssl.engine.factory.class",
    "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm", "ssl.secure.random.implementation",
    "ssl.protocol", "ssl.provider", "metadata.max.idle.ms", "send.buffer.bytes", "receive.buffer.bytes",
    "exclude.internal.topics", "default.api.timeout.ms", "client.dns.lookup",
})
#: Java names whose librdkafka property has another name (librdkafka knows most Java names itself).
RENAMED = {
    "max.request.size": "message.max.bytes",
    "ssl.truststore.location": "ssl.ca.location",
    "ssl.truststore.type": None,  # librdkafka reads PEM (or PKCS#12 keystores); the type is implied
}


def _jaas_to_sasl(value: str) -> dict[str, str]:
    """``sasl.jaas.config`` of the PLAIN/SCRAM login modules as librdkafka's sasl.username/sasl.password."""
    found = dict(re.findall(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"', value))
    if "username" not in found or "password" not in found:
        raise ValueError("only PlainLoginModule/ScramLoginModule with username=\"...\" password=\"...\" is supported")
    return {"sasl.username": found["username"], "sasl.password": found["password"]}


def client_config(props: dict[str, Any], prefix: str) -> dict[str, Any]:
    """Java Kafka client properties (``props``, named ``<prefix><name>`` in the configuration) as librdkafka's.

    Java-only keys are dropped (debug log); ``sasl.jaas.config`` becomes sasl.username/password; a few
    renamed keys are mapped. Everything else goes through, and librdkafka refuses what it does not know.
    """
    out: dict[str, Any] = {}
    for name, value in props.items():
        value = "true" if value is True else "false" if value is False else str(value)
        if name in JAVA_ONLY:
            log.debug("%s%s: a Java client property librdkafka has no use for; ignored", prefix, name)
        elif name == "sasl.jaas.config":
            try:
                out.update(_jaas_to_sasl(value))
            except ValueError as e:
                raise ConfigError([f"{prefix}{name}: {e}"]) from None
        elif name == "partitioner.class":
            if not value.endswith(("DefaultPartitioner", "BuiltInPartitioner")):
                raise ConfigError([f"{prefix}{name}: {value!r} is a Java class; only Kafka's default partitioner "
                                   "(murmur2 of the key) is available"])
        elif name in RENAMED:
            if RENAMED[name] is not None:
                out[RENAMED[name]] = value
        elif name == "buffer.memory":
            out["queue.buffering.max.kbytes"] = str(max(1, int(value) // 1024))
        else:
            out[name] = value
    return out


def redact(text: str, conf: dict[str, Any] | None = None) -> str:
    """``text`` with every secret value of ``conf`` (and any quoted librdkafka value) removed."""
    for name, value in (conf or {}).items():
        if is_secret(name) and value and str(value) in text:
            text = text.replace(str(value), "********")
    return re.sub(r'value "[^"]*"', "value", text)


def check_hosts(bootstrap: str, prop: str) -> None:
    """ConfigError naming ``prop`` if a bootstrap host name does not resolve (a typo, not an outage)."""
    for server in [s.strip() for s in str(bootstrap).split(",") if s.strip()]:
        host, _, port = server.rpartition(":") if ":" in server else (server, "", "9092")
        host = host.strip("[]")
        if not host or not port.isdigit():
            raise ConfigError([f"{prop}: {server!r} is not host:port"])
        try:
            socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
        except socket.gaierror as e:
            if e.errno in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", -5)):
                raise ConfigError([f"{prop}: the host {host!r} is unknown (the name does not resolve)"]) from None


def _config_error(e: Exception, conf: dict[str, Any], prefix: str, given: dict[str, Any]) -> ConfigError:
    """A librdkafka configuration refusal as a ConfigError naming the property as the user wrote it."""
    text = redact(str(e.args[0].str() if e.args and hasattr(e.args[0], "str") else e), conf)
    m = re.search(r'property:? "([^"]+)"', text)
    name = m.group(1) if m else None
    java = next((k for k in given if k == name or RENAMED.get(k) == name), name) if name else None
    where = f"{prefix}{java}" if java else prefix.rstrip(".")
    return ConfigError([f"{where}: refused by librdkafka: {text}"])


def import_kafka() -> Any:
    """The confluent_kafka module; ConfigError saying what to install if it is missing."""
    try:
        import confluent_kafka
    except ImportError:
        raise ConfigError(["Kafka support needs confluent-kafka: pip install 'cdc-core[kafka]'"]) from None
    return confluent_kafka


class _LibrdkafkaLog:
    """librdkafka's own log lines at DEBUG (cdc logs each failure once, with what it does about it); fatal ones at WARNING."""

    _log = logging.getLogger("cdc.kafka.librdkafka")

    def log(self, level: int, fmt: str, *args: Any) -> None:
        """Called by confluent-kafka on ``poll``/``flush``."""
        self._log.log(logging.WARNING if level >= logging.CRITICAL else logging.DEBUG, fmt, *args)


def new_client(kind: str, conf: dict[str, Any], prefix: str, given: dict[str, Any] | None = None) -> Any:
    """A confluent-kafka ``Producer``, ``Consumer`` or ``AdminClient`` (``kind``), logging through ``cdc.kafka``."""
    ck = import_kafka()
    conf = {**conf, "logger": _LibrdkafkaLog()}
    try:
        if kind == "admin":
            from confluent_kafka.admin import AdminClient

            return AdminClient(conf)
        return getattr(ck, kind)(conf)
    except (ck.KafkaException, ValueError, TypeError) as e:
        raise _config_error(e, conf, prefix, given or {}) from None


def describe(err: Any, conf: dict[str, Any] | None = None) -> str:
    """A KafkaError (or exception) in one line, without secrets."""
    if hasattr(err, "args") and err.args and hasattr(err.args[0], "str"):
        err = err.args[0]
    text = f"{err.name()}: {err.str()}" if hasattr(err, "name") else str(err)
    return redact(text.splitlines()[0] if text else text, conf)
