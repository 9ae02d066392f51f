"""The JSON line every line-oriented sink writes: topic, key, value and headers."""

from __future__ import annotations

import orjson

from cdc_core.spi.sink import SinkRecord

_dumps = orjson.dumps
_EMPTY_HEADERS = b"{}"


def record_line(r: SinkRecord) -> bytes:
    """``{"topic":...,"key":...,"value":...,"headers":{...}}`` and a newline; key/value embedded as written."""
    return b"".join(
        (
            b'{"topic":',
            _dumps(r.topic),
            b',"key":',
            r.key if r.key is not None else b"null",
            b',"value":',
            r.value if r.value is not None else b"null",
            b',"headers":',
            _dumps(r.headers) if r.headers else _EMPTY_HEADERS,
            b"}\n",
        )
    )


_TOPIC_PREFIXES: dict[str, bytes] = {}


def _topic_prefix(topic: str) -> bytes:
    """``{"topic":<topic>,"key":``, made once per topic."""
    prefix = _TOPIC_PREFIXES.get(topic)
    if prefix is None:
        if len(_TOPIC_PREFIXES) > 10_000:  # topics made from data: keep the cache bounded
            _TOPIC_PREFIXES.clear()
        prefix = _TOPIC_PREFIXES[topic] = b'{"topic":' + _dumps(topic) + b',"key":'
    return prefix


_VALUE = b',"value":'
_NO_HEADERS_END = b',"headers":{}}\n'


def record_parts(r: SinkRecord) -> tuple[bytes, ...]:
    """The pieces of ``record_line(r)``, unjoined (for ``os.writev``)."""
    key, value, headers = r.key, r.value, r.headers
    return (
        _topic_prefix(r.topic),
        key if key is not None else b"null",
        _VALUE,
        value if value is not None else b"null",
        _NO_HEADERS_END if not headers else b"".join((b',"headers":', _dumps(headers), b"}\n")),
    )
