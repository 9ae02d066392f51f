"""Reading ``COPY ... TO STDOUT`` in blocks of rows straight from libpq's buffer.

psycopg's ``Copy`` iterator runs a generator and a wait call per row (about 0.5 µs each); here the
rows libpq already holds are taken in one loop, and the socket is waited on (GIL released) only when
the buffer is empty. The ``Copy`` context still opens the COPY and cancels it on an error.
"""

from __future__ import annotations

import select
from collections.abc import Iterator

import psycopg
from psycopg import pq

_COMMAND_OK = pq.ExecStatus.COMMAND_OK


def _wait_readable(pgconn: pq.abc.PGconn) -> None:
    """Block (without the GIL) until the server sends more, then move it into libpq's buffer."""
    fd = pgconn.socket
    while not select.select([fd], [], [], 1.0)[0]:
        pass
    pgconn.consume_input()


def _finish(pgconn: pq.abc.PGconn, encoding: str) -> None:
    """Take the COPY's final result (after libpq reported its end); raise the server's error if it failed."""
    error = None
    while True:
        while pgconn.is_busy():
            _wait_readable(pgconn)
        result = pgconn.get_result()
        if result is None:
            break
        if result.status != _COMMAND_OK and error is None:
            error = psycopg.errors.error_from_result(result, encoding=encoding)
    if error is not None:
        raise error


def read_blocks(copy: psycopg.Copy, max_rows: int) -> Iterator[bytes]:
    """The COPY's data as blocks of whole rows (each ending with a newline), at most ``max_rows`` rows each.

    A block is handed over as soon as libpq's buffer and the socket are empty, so rows never wait
    for a full block while the server is slow. Must run inside ``with cursor.copy(...) as copy``;
    closing the generator early leaves the rest to the ``Copy`` context (it cancels the COPY).
    """
    pgconn = copy.connection.pgconn
    get = pgconn.get_copy_data
    join = b"".join
    block: list = []
    append = block.append
    while True:
        nbytes, data = get(1)
        if nbytes == 0:
            pgconn.consume_input()  # what the socket already holds, without blocking
            nbytes, data = get(1)
            if nbytes == 0:
                if block:
                    yield join(block)
                    block.clear()
                _wait_readable(pgconn)
                continue
        if nbytes > 0:
            append(data)
            if len(block) >= max_rows:
                yield join(block)
                block.clear()
            continue
        if nbytes == -1:
            break
        raise psycopg.OperationalError(f"COPY failed: {pgconn.get_error_message()}")  # -2: libpq's own error
    if block:
        yield join(block)
    _finish(pgconn, copy.connection.info.encoding)
