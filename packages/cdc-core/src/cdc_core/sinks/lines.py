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
