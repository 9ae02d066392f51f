"""Snapshot rows read off an unbuffered result's packets and parsed in one generated function per result.

PyMySQL turns each row packet into a tuple with several Python calls per column (length-coded
integer, read, decode), then cdc's row parser (``cdc_mysql.snapshot.row_parser``) calls a parser per
column again: a quarter of a MariaDB snapshot's time went to PyMySQL's part (py-spy,
benchmarks/mariadb_snapshot.py). ``parsed_rows`` reads the packets of an ``SSCursor``'s result itself
(as PyMySQL's ``_read_rowdata_packet_unbuffered`` does, its end-of-result handling included) and
parses each one in a function generated for the result's columns: the text protocol's
length-coded values cut out inline, decoded as PyMySQL decodes them (the field's encoding; binary
fields stay bytes), then given to the same value parsers, in the table's column order. A buffered
cursor (small tables) keeps PyMySQL's rows and the row parser.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pymysql.cursors

from cdc_mysql.model import TableDef
from cdc_mysql.snapshot import _float32, row_parser, value_parser

#: Value parsers that take the text protocol's bytes as they are (ASCII digits): no decoding first.
_TAKE_BYTES = (int, float, _float32)


def _long_value(d: bytes, p: int) -> tuple[bytes | None, int]:
    """The length-coded value at ``d[p]`` whose length takes 2, 3 or 8 bytes (or NULL); it and the next position."""
    first = d[p]
    if first == 251:
        return None, p + 1
    size = {252: 2, 253: 3, 254: 8}[first]
    n = int.from_bytes(d[p + 1:p + 1 + size], "little")
    start = p + 1 + size
    return d[start:start + n], start + n


def _converter(parse: Callable[[Any], Any], encoding: str | None, decoder: Callable[[Any], Any] | None) -> Callable:
    """What one column's bytes go through: PyMySQL's decoding (and decoder, if the connection has one), then ``parse``."""
    if decoder is None and (encoding is None or parse in _TAKE_BYTES):
        return parse
    if decoder is None:
        return lambda v: parse(v.decode(encoding))
    if encoding is None:
        return lambda v: parse(decoder(v))
    return lambda v: parse(decoder(v.decode(encoding)))


def packet_parser(definition: TableDef, names: list[str], fields: list[tuple[str | None, Any]]) -> Callable[[bytes], tuple]:
    """A function from a row packet's bytes to the row's values in the table's column order (None for a column the
    result lacks), for a result of columns ``names`` decoded as ``fields`` says (PyMySQL's ``converters``)."""
    index = {n.lower(): i for i, n in enumerate(names)}
    env: dict[str, Any] = {"_long": _long_value}
    lines = ["def parse(d):", "    p = 0"]
    for i in range(len(names)):
        lines += ["    n = d[p]",
                  "    if n < 251:",
                  "        e = p + 1 + n",
                  f"        v{i} = d[p + 1:e]",
                  "        p = e",
                  "    else:",
                  f"        v{i}, p = _long(d, p)"]
    items = []
    for k, col in enumerate(definition.columns):
        i = index.get(col.name.lower())
        if i is None:
            items.append("None")
            continue
        encoding, decoder = fields[i]
        env[f"c{k}"] = _converter(value_parser(col), encoding, decoder)
        items.append(f"None if v{i} is None else c{k}(v{i})")
    lines.append(f"    return ({', '.join(items)}{',' if len(items) == 1 else ''})")
    exec(compile("\n".join(lines), "<cdc snapshot packet parser>", "exec"), env)
    return env["parse"]


def parsed_rows(cur: Any, definition: TableDef) -> Callable[[int], list[tuple]]:
    """``fetch(n)``: up to ``n`` more rows of ``cur``'s executed SELECT as the table's parsed values (empty at the end)."""
    names = [d[0] for d in cur.description or ()]
    result = getattr(cur, "_result", None)
    if not isinstance(cur, pymysql.cursors.SSCursor) or result is None or not result.unbuffered_active \
            or len(getattr(result, "converters", ())) != len(names):
        parse = row_parser(definition, names)
        return lambda n: list(map(parse, cur.fetchmany(n)))
    parse_packet = packet_parser(definition, names, result.converters)

    def fetch(n: int) -> list[tuple]:
        out: list[tuple] = []
        if not result.unbuffered_active:
            return out
        read = result.connection._read_packet
        append = out.append
        for _ in range(n):
            packet = read()
            if result._check_packet_is_eof(packet):  # PyMySQL's end of an unbuffered result
                result.unbuffered_active = False
                result.connection = None
                result.rows = None
                break
            append(parse_packet(packet._data))
        if out:
            cur.rownumber += len(out)
            result.affected_rows = 1
        return out

    return fetch
