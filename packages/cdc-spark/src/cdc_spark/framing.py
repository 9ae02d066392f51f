"""JsonConverter's framing, split from the payload: the driver ships payloads and a frame index, executors frame.

``{"schema": <schema>, "payload": <payload>}`` repeats the same schema JSON on every event of a
table. The driver serializes only the payload and names the frame (the bytes before the payload,
one per schema); an executor puts the two together, exactly as ``JsonSerializer`` writes them:
null when both schema and payload are null, ``"schema":null`` for a schemaless payload, and the
bare payload when ``schemas.enable`` is off.
"""

from __future__ import annotations

import os
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from cdc_core.schema import Schema
from cdc_core.serializers.defaults import payload_filler

#: The frame index of a bare payload (schemas off) or of a null key/value.
BARE = -1
_dumps = orjson.dumps


def _kept(payload: Any) -> bytes:
    """``orjson.dumps`` for bytes that stay buffered: a copy of exactly their size.

    orjson returns an over-allocated buffer shrunk in place; keeping many of them alive makes
    each further allocation grow the heap (about 4 us a call instead of 0.4), so the original is
    freed at once and the exact-size copy kept.
    """
    return memoryview(_dumps(payload)).tobytes()


class Framer:
    """Splits keys or values into ``(frame, payload bytes)`` on the driver; ``frames`` lists the frames."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self._by_schema: dict[int, tuple[Schema | None, int]] = {}  # the schema is kept so its id stays its own

    def frame(self, schema: Schema | None) -> int:
        """The index of the frame of ``schema`` (added on first use)."""
        found = self._by_schema.get(id(schema))
        if found is not None:
            return found[1]
        rendered = schema.json_bytes() if schema is not None else b"null"
        self.frames.append(b'{"schema":' + rendered + b',"payload":')
        index = len(self.frames) - 1
        self._by_schema[id(schema)] = (schema, index)
        return index

    def split(self, schema: Schema | None, payload: Any, schemas_enable: bool,
              replace_null_with_default: bool = True) -> tuple[int, bytes | None]:
        """``(frame, payload bytes)`` of one key or value (defaults applied as ``JsonSerializer`` does)."""
        filler = payload_filler(schema, replace_null_with_default)
        if filler is not None:
            payload = filler(payload)
        if not schemas_enable:
            return BARE, None if payload is None else _kept(payload)
        if payload is None and schema is None:
            return BARE, None
        return self.frame(schema), _kept(payload)


if os.environ.get("CDC_CHECK_JSON"):  # the test suite's JsonConverter grammar check (cdc_core.serializers.checking)
    from cdc_core.serializers.checking import check_bytes

    _split = Framer.split

    def _checked_split(self: Framer, schema: Schema | None, payload: Any, schemas_enable: bool,
                       replace_null_with_default: bool = True) -> tuple[int, bytes | None]:
        frame, data = _split(self, schema, payload, schemas_enable, replace_null_with_default)
        framed = data if frame == BARE else self.frames[frame] + data + b"}"
        check_bytes(framed, schemas_enable and frame != BARE, "framed record")
        return frame, data

    Framer.split = _checked_split  # type: ignore[method-assign]


def join_frames(payloads: pa.Array, frames_index: pa.Array, frames: list[bytes]) -> pa.Array:
    """The framed strings: ``frame + payload + "}"`` per row, null where the frame is ``BARE``."""
    if len(payloads) == 0:
        return payloads
    index = pc.if_else(pc.equal(frames_index, BARE), pa.scalar(None, pa.int32()), frames_index)
    prefix = pa.array(frames, pa.binary()).cast(pa.string()).take(index)
    return pc.binary_join_element_wise(prefix, payloads, pa.repeat(pa.scalar("}"), len(payloads)), "")
